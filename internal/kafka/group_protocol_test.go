package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseGroupProtocol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    GroupProtocol
		wantErr bool
	}{
		{in: "classic", want: GroupProtocolClassic},
		{in: "consumer", want: GroupProtocolConsumer},
		{in: "", wantErr: true}, // a flag given empty is a mistake; a config's empty field is the default
		{in: "Consumer", wantErr: true},
		{in: "streams", wantErr: true},
		{in: "share", wantErr: true},
		{in: " classic", wantErr: true},
	} {
		got, err := ParseGroupProtocol(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseGroupProtocol(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestGroupProtocolValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p       GroupProtocol
		wantErr bool
	}{
		{p: ""},
		{p: GroupProtocolClassic},
		{p: GroupProtocolConsumer},
		{p: "eager", wantErr: true},
	} {
		if err := tc.p.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("GroupProtocol(%q).Validate() = %v, want error %v", tc.p, err, tc.wantErr)
		}
	}
}

// TestGroupProtocolOpts checks the options as a client sees them: franz-go speaks KIP-848 only with
// ServerSideBalancer and a sticky or range first balancer, and silently stays classic otherwise.
func TestGroupProtocolOpts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p            GroupProtocol
		wantBalancer string
		wantServer   bool
	}{
		{p: "", wantBalancer: "cooperative-sticky"},
		{p: GroupProtocolClassic, wantBalancer: "cooperative-sticky"},
		{p: GroupProtocolConsumer, wantBalancer: "sticky", wantServer: true},
	} {
		opts := append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1"), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t")}, tc.p.Opts()...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatalf("%s: NewClient: %v", tc.p, err)
		}
		balancers, _ := cl.OptValue(kgo.Balancers).([]kgo.GroupBalancer)
		server, _ := cl.OptValue(kgo.ServerSideBalancer).(bool)
		cl.Close()
		if len(balancers) != 1 || balancers[0].ProtocolName() != tc.wantBalancer || server != tc.wantServer {
			names := make([]string, len(balancers))
			for i, b := range balancers {
				names[i] = b.ProtocolName()
			}
			t.Errorf("%s: balancers %v, server-side %v; want [%s], %v", tc.p, names, server, tc.wantBalancer, tc.wantServer)
		}
	}
}

func TestGroupProtocolString(t *testing.T) {
	t.Parallel()
	for p, want := range map[GroupProtocol]string{"": "classic", GroupProtocolClassic: "classic", GroupProtocolConsumer: "consumer"} {
		if got := p.String(); got != want {
			t.Errorf("GroupProtocol(%q).String() = %q, want %q", string(p), got, want)
		}
	}
}
