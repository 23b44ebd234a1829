package status

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

type bundle struct {
	cluster *kfake.Cluster
	opts    []kgo.Opt
	names   kafka.Names
	cl      *kgo.Client
	ctx     context.Context
}

func setup(t *testing.T) *bundle {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	names := kafka.Config{Namespace: "st"}.Names()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{WorkPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	return &bundle{cluster: c, opts: opts, names: names, cl: cl, ctx: ctx}
}

func (b *bundle) put(t *testing.T, key string, value []byte) {
	t.Helper()
	if err := b.cl.ProduceSync(b.ctx, &kgo.Record{Topic: b.names.Schedules, Key: []byte(key), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A namespace with a schedule, a broken record for it, no ticker and no worker: the report lists the schedule
// (its last valid definition), names the broken record, says there is no leader, and has no errors.
func TestCollectSchedulesAndBrokenRecords(t *testing.T) {
	b := setup(t)
	v, err := schedule.Encode(schedule.Spec{Name: "scan", Every: schedule.Duration(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	b.put(t, "scan", v)
	b.put(t, "scan", []byte("garbage"))
	rep, err := Collect(b.ctx, b.opts, b.names, "st")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Leader != nil || len(rep.Schedules) != 1 || rep.Schedules[0].Name != "scan" || rep.Schedules[0].Schedule != "every 30s" {
		t.Errorf("report: leader %v, schedules %+v; want no leader and scan every 30s", rep.Leader, rep.Schedules)
	}
	if len(rep.Broken) != 1 || rep.Broken[0].Name != "scan" || rep.Broken[0].Offset != 1 || !rep.Broken[0].HasValid {
		t.Errorf("broken = %+v, want scan at offset 1 with a valid definition kept", rep.Broken)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors = %v, want none", rep.Errors)
	}
	var out bytes.Buffer
	Print(&out, rep)
	if !strings.Contains(out.String(), "BROKEN SCHEDULE RECORDS") || !strings.Contains(out.String(), "scan at offset 1") {
		t.Errorf("printed report lacks the broken record:\n%s", out.String())
	}
}

// A part that cannot be read is reported, not dropped: the rest of the report is still there. A refusal by the
// authorizer is an error naming the permission.
func TestCollectReportsErrors(t *testing.T) {
	t.Run("failure", func(t *testing.T) { collectWithDescribeError(t, kerr.UnknownServerError.Code) })
	t.Run("refusal", func(t *testing.T) { collectWithDescribeError(t, kerr.GroupAuthorizationFailed.Code) })
}

func collectWithDescribeError(t *testing.T, code int16) {
	b := setup(t)
	v, _ := schedule.Encode(schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	b.put(t, "beat", v)
	b.cluster.ControlKey(int16(kmsg.DescribeGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		r := req.(*kmsg.DescribeGroupsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	rep, err := Collect(b.ctx, b.opts, b.names, "st")
	if code == kerr.GroupAuthorizationFailed.Code {
		if err == nil || !strings.Contains(err.Error(), "Describe") || !strings.Contains(err.Error(), "st.ticker") {
			t.Fatalf("a refused describe: err = %v, want one naming Describe on the ticker group", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 {
		t.Errorf("schedules = %+v, want beat", rep.Schedules)
	}
	joined := strings.Join(rep.Errors, "; ")
	if !strings.Contains(joined, "ticker group") || !strings.Contains(joined, "UNKNOWN_SERVER_ERROR") {
		t.Errorf("errors = %q, want the ticker group's failure named", joined)
	}
}
