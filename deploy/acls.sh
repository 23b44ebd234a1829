#!/usr/bin/env bash
# acls.sh: add tickgroup's ACLs (deploy/acls.txt, least privilege) to a cluster with kafka-acls.sh.
#
#   deploy/acls.sh --bootstrap-server HOST:PORT [--command-config admin.properties] [--namespace NS]
#                  [--ticker-principal User:ticker] [--worker-principal User:worker]
#                  [--operator-principal User:operator] [--auditor-principal User:auditor] [--forward TOPIC]
#                  [--pool NAME [--pool-worker-principal User:worker-NAME]] [--console-principal User:console]
#                  [--dry-run]
#
# The forward lines are added (for the worker principal) only with --forward; the pool lines only with --pool
# (the ticker, operator and auditor principals reach every pool; the pool's workers get the pool-worker lines);
# the read-only console's (deploy/acls-console.txt) only with --console-principal (a console with --actions
# uses the operator's). --dry-run prints the kafka-acls.sh commands instead of running them. KAFKA_ACLS names
# the kafka-acls.sh to run (default: kafka-acls.sh on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

bootstrap="" config="" ns=tickgroup forward="" pool="" dry=0
declare -A principal=([ticker]=User:ticker [worker]=User:worker [operator]=User:operator [auditor]=User:auditor)
while (($#)); do
	case $1 in
	--bootstrap-server) bootstrap=$2; shift 2 ;;
	--command-config) config=$2; shift 2 ;;
	--namespace) ns=$2; shift 2 ;;
	--ticker-principal) principal[ticker]=$2; shift 2 ;;
	--worker-principal) principal[worker]=$2; shift 2 ;;
	--operator-principal) principal[operator]=$2; shift 2 ;;
	--auditor-principal) principal[auditor]=$2; shift 2 ;;
	--forward) forward=$2; shift 2 ;;
	--pool) pool=$2; shift 2 ;;
	--pool-worker-principal) principal[pool-worker]=$2; shift 2 ;;
	--console-principal) principal[console]=$2; shift 2 ;;
	--dry-run) dry=1; shift ;;
	-h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "acls.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ -n $bootstrap ]] || { echo "acls.sh: --bootstrap-server is required" >&2; exit 2; }
principal[forward]=${principal[worker]}
principal[ticker-pools]=${principal[ticker]}
principal[ticker-leaders]=${principal[ticker]}
principal[operator-pools]=${principal[operator]}
principal[auditor-pools]=${principal[auditor]}
[[ -n ${principal[pool-worker]:-} ]] || principal[pool-worker]=User:worker-$pool
principal[pool-forward]=${principal[pool-worker]}
files=("$here/acls.txt")
if [[ -n ${principal[console]:-} ]]; then
	principal[console-pools]=${principal[console]}
	files+=("$here/acls-console.txt")
fi

base=("${KAFKA_ACLS:-kafka-acls.sh}" --bootstrap-server "$bootstrap")
[[ -n $config ]] && base+=(--command-config "$config")

while read -r role type pattern name ops; do
	[[ -z $role || $role == \#* ]] && continue
	if [[ $role == forward && -z $forward ]]; then continue; fi
	if [[ $role == *pool* && -z $pool ]]; then continue; fi
	if [[ $role == pool-forward && -z $forward ]]; then continue; fi
	name=${name//'${NS}'/$ns}
	name=${name//'${FORWARD}'/$forward}
	name=${name//'${POOL}'/$pool}
	cmd=("${base[@]}" --add --allow-principal "${principal[$role]}" --resource-pattern-type "$pattern")
	case $type in
	topic) cmd+=(--topic "$name") ;;
	group) cmd+=(--group "$name") ;;
	transactional-id) cmd+=(--transactional-id "$name") ;;
	*) echo "acls.sh: unknown resource type $type in acls.txt" >&2; exit 1 ;;
	esac
	IFS=, read -ra list <<<"$ops"
	for op in "${list[@]}"; do cmd+=(--operation "$op"); done
	if ((dry)); then
		printf '%q ' "${cmd[@]}"
		echo
	else
		"${cmd[@]}"
	fi
done < <(cat "${files[@]}")
