package devbroker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Defaults of Config.
const (
	// DefaultAddr is not Kafka's 9092, so that the development broker never clashes with a real local Kafka.
	DefaultAddr    = "127.0.0.1:29092"
	DefaultDataDir = ".tickgroup-dev/broker"
)

// Config configures the development broker.
type Config struct {
	// Addr is the host:port to listen on; the broker advertises the same address to clients, so the host must be
	// one they can reach (not 0.0.0.0). Port 0 picks a free port; Addrs tells which. Defaults to 127.0.0.1:29092.
	Addr string
	// DataDir holds the persisted state; it is created when missing and reloaded when present. Defaults to
	// .tickgroup-dev/broker (relative to the working directory).
	DataDir string
	// Logger receives the broker's own logs. kfake's per-request "info" messages are logged at debug level.
	// Defaults to discarding them.
	Logger *slog.Logger
}

// GroupMinSessionTimeoutMs is the smallest group session timeout the broker accepts, far below Kafka's 6 s default
// so that development runs can show a fast failover of the ticker leader.
const GroupMinSessionTimeoutMs = 1000

// Broker is a running development broker.
type Broker struct {
	cluster *kfake.Cluster
	logger  *slog.Logger
	addrs   []string
	once    sync.Once
}

// New starts a single-node development broker listening on cfg.Addr with its state in cfg.DataDir.
func New(cfg Config) (*Broker, error) {
	addr := cmp.Or(cfg.Addr, DefaultAddr)
	dir := cmp.Or(cfg.DataDir, DefaultDataDir)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("devbroker: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("devbroker: address %q: port must be a number from 0 to 65535", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil, fmt.Errorf("devbroker: address %q: the broker advertises its listen address, so it must be reachable (not %s)", addr, host)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("devbroker: creating data directory: %w", err)
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(port),
		// kfake always asks for 127.0.0.1:<port>; listen on the configured host instead.
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(host, p))
		}),
		kfake.DataDir(dir),
		kfake.ClusterID("tickgroup-dev"),
		kfake.BrokerConfigs(map[string]string{
			"group.min.session.timeout.ms": strconv.Itoa(GroupMinSessionTimeoutMs),
		}),
		kfake.WithLogger(slogLogger{logger}),
	)
	if err != nil {
		return nil, fmt.Errorf("devbroker: starting kfake on %s with data in %s: %w", addr, dir, err)
	}
	b := &Broker{cluster: c, logger: logger, addrs: c.ListenAddrs()}
	logger.Info("development broker listening (kfake: not evidence of Kafka behaviour)", "addrs", b.addrs, "data_dir", dir)
	return b, nil
}

// Addrs returns the seed broker addresses for clients.
func (b *Broker) Addrs() []string { return append([]string(nil), b.addrs...) }

// Run blocks until ctx ends, then closes the broker and returns nil.
func (b *Broker) Run(ctx context.Context) error {
	<-ctx.Done()
	b.logger.Info("stopping development broker")
	b.Close()
	b.logger.Info("development broker stopped")
	return nil
}

// Close stops the broker and writes its state to the data directory. It is safe to call more than once.
func (b *Broker) Close() { b.once.Do(b.cluster.Close) }

// slogLogger adapts a *slog.Logger to kfake's Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var lvl slog.Level
	switch level {
	case kfake.LogLevelError:
		lvl = slog.LevelError
	case kfake.LogLevelWarn:
		lvl = slog.LevelWarn
	case kfake.LogLevelInfo, kfake.LogLevelDebug:
		// kfake's info level is per request; it would drown the ticker's and worker's own logs.
		lvl = slog.LevelDebug
	default:
		return
	}
	if !s.l.Enabled(context.Background(), lvl) {
		return
	}
	s.l.Log(context.Background(), lvl, fmt.Sprintf(format, args...), "component", "kfake")
}
