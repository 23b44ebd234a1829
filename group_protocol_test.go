package tickgroup

import (
	"context"
	"strings"
	"testing"
)

// TestTickerGroupProtocol: NewTicker takes the two protocols (and the empty default), and refuses any other and
// the consumer protocol with an instance ID, before any connection.
func TestTickerGroupProtocol(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		protocol   GroupProtocol
		instanceID string
		wantErr    string
	}{
		{protocol: ""},
		{protocol: GroupProtocolClassic, instanceID: "ticker-0"},
		{protocol: GroupProtocolConsumer},
		{protocol: "eager", wantErr: `group protocol "eager"`},
		{protocol: GroupProtocolConsumer, instanceID: "ticker-0", wantErr: "static membership"},
	} {
		_, err := NewTicker(TickerConfig{Kafka: KafkaConfig{Brokers: []string{"127.0.0.1:1"}}, GroupProtocol: tt.protocol, InstanceID: tt.instanceID})
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("GroupProtocol %q, InstanceID %q: NewTicker: %v, want error %q", tt.protocol, tt.instanceID, err, tt.wantErr)
		}
	}
}

// TestWorkerGroupProtocol: NewWorker checks the protocol as NewTicker does.
func TestWorkerGroupProtocol(t *testing.T) {
	t.Parallel()
	handler := func(context.Context, Tick) error { return nil }
	for _, tt := range []struct {
		protocol   GroupProtocol
		instanceID string
		wantErr    string
	}{
		{protocol: ""},
		{protocol: GroupProtocolClassic, instanceID: "worker-0"},
		{protocol: GroupProtocolConsumer},
		{protocol: "eager", wantErr: `group protocol "eager"`},
		{protocol: GroupProtocolConsumer, instanceID: "worker-0", wantErr: "static membership"},
	} {
		_, err := NewWorker(WorkerConfig{Kafka: KafkaConfig{Brokers: []string{"127.0.0.1:1"}}, GroupProtocol: tt.protocol, InstanceID: tt.instanceID}, handler)
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("GroupProtocol %q, InstanceID %q: NewWorker: %v, want error %q", tt.protocol, tt.instanceID, err, tt.wantErr)
		}
	}
}
