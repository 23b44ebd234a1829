package kafka

import (
	"cmp"
	"os"
	"strconv"
)

// InstanceName is the name a process takes in the fleet when it is given none: <hostname>-<pid>, unique among
// the running processes as long as host names are, and readable where it shows: logs, client IDs, the groups'
// member lists, outcome records. role ("ticker", "worker") stands in for the host name where the system names
// none. The one rule for a ticker's Instance and a worker's ID, in the API and in the commands' flags.
func InstanceName(role string) string {
	host, _ := os.Hostname()
	return cmp.Or(host, role) + "-" + strconv.Itoa(os.Getpid())
}
