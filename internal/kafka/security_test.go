package kafka_test

// Security tests of kafka.Config.Opts against kfake with SASL and TLS listeners. They are fast unit tests of the
// client options (the right credentials connect, wrong ones are refused, a certificate is verified against the
// configured CA); kfake stands in for the broker, so they say nothing about a real broker's security setup.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

const securityTopic = "security"

// connect builds a client from cfg.Opts, fetches metadata and produces one record, all within a short deadline so
// that a refused connection fails the check instead of retrying for the client's default minute.
// kfake closes the connection on a failed SASL authentication (the client sees EOF) where Kafka answers
// SASL_AUTHENTICATION_FAILED; the tests only ask that the connection is refused.
func connect(t *testing.T, cfg kafka.Config) error {
	t.Helper()
	opts, err := cfg.Opts(nil)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(1), kgo.RetryTimeout(2*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, securityTopic)
	if err != nil {
		return err
	}
	if td := md.Topics[securityTopic]; td.Err != nil {
		return td.Err
	}
	return cl.ProduceSync(ctx, &kgo.Record{Topic: securityTopic, Value: []byte("x")}).FirstErr()
}

func newCluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, securityTopic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func TestSecuritySASL(t *testing.T) {
	t.Parallel()
	seeds := newCluster(t,
		kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "plain-user", "plain-pass"),
		kfake.Superuser("SCRAM-SHA-256", "scram256-user", "scram256-pass"),
		kfake.Superuser("SCRAM-SHA-512", "scram512-user", "scram512-pass"),
	)
	sasl := func(mech, user, pass string) kafka.Config {
		return kafka.Config{Brokers: seeds, SASL: kafka.SASLConfig{Mechanism: mech, Username: user, Password: pass}}
	}
	for _, tc := range []struct {
		name string
		cfg  kafka.Config
		ok   bool
	}{
		{"plain", sasl("plain", "plain-user", "plain-pass"), true},
		{"plain upper case", sasl("PLAIN", "plain-user", "plain-pass"), true},
		{"scram-sha-256", sasl("scram-sha-256", "scram256-user", "scram256-pass"), true},
		{"scram-sha-512", sasl("scram-sha-512", "scram512-user", "scram512-pass"), true},
		{"plain wrong password", sasl("plain", "plain-user", "nope"), false},
		{"plain unknown user", sasl("plain", "nobody", "plain-pass"), false},
		{"scram-sha-256 wrong password", sasl("scram-sha-256", "scram256-user", "nope"), false},
		{"scram-sha-512 wrong password", sasl("scram-sha-512", "scram512-user", "nope"), false},
		{"scram user under the other hash", sasl("scram-sha-512", "scram256-user", "scram256-pass"), false},
		{"no sasl", kafka.Config{Brokers: seeds}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := connect(t, tc.cfg)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("connect with valid credentials: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("connect succeeded, want it refused")
			case !tc.ok:
				t.Logf("refused as expected: %v", err)
			}
		})
	}
}

// pki is a test CA with a server certificate for 127.0.0.1 and localhost and a client certificate, written as PEM
// files.
type pki struct {
	pool                      *x509.CertPool
	server                    tls.Certificate
	caFile, certFile, keyFile string // the CA, and the client's certificate and key
	otherCAFile               string // a CA that signed nothing here
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caCert, caKey, caPEM := newCA(t, "tickgroup test CA")
	_, _, otherPEM := newCA(t, "unrelated CA")
	srvPEM, srvKeyPEM := issue(t, caCert, caKey, x509.ExtKeyUsageServerAuth, "kafka", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	cliPEM, cliKeyPEM := issue(t, caCert, caKey, x509.ExtKeyUsageClientAuth, "tickgroup-client", nil, nil)
	server, err := tls.X509KeyPair(srvPEM, srvKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	p := pki{
		pool:        pool,
		server:      server,
		caFile:      filepath.Join(dir, "ca.pem"),
		otherCAFile: filepath.Join(dir, "other-ca.pem"),
		certFile:    filepath.Join(dir, "client.pem"),
		keyFile:     filepath.Join(dir, "client-key.pem"),
	}
	for file, data := range map[string][]byte{p.caFile: caPEM, p.otherCAFile: otherPEM, p.certFile: cliPEM, p.keyFile: cliKeyPEM} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage, cn string, dns []string, ips []net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

func TestSecurityTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	seeds := newCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}))
	localhost := make([]string, len(seeds))
	for i, s := range seeds {
		_, port, _ := net.SplitHostPort(s)
		localhost[i] = net.JoinHostPort("localhost", port)
	}
	for _, tc := range []struct {
		name    string
		brokers []string
		tls     kafka.TLSConfig
		ok      bool
	}{
		{"ca file", seeds, kafka.TLSConfig{Enabled: true, CAFile: p.caFile}, true},
		{"ca file implies tls", seeds, kafka.TLSConfig{CAFile: p.caFile}, true},
		{"ca file, name from host", localhost, kafka.TLSConfig{Enabled: true, CAFile: p.caFile}, true},
		{"ca file, server name override", seeds, kafka.TLSConfig{Enabled: true, CAFile: p.caFile, ServerName: "localhost"}, true},
		{"insecure skip verify", seeds, kafka.TLSConfig{Enabled: true, InsecureSkipVerify: true}, true},
		{"system roots only", seeds, kafka.TLSConfig{Enabled: true}, false},
		{"unrelated ca", seeds, kafka.TLSConfig{Enabled: true, CAFile: p.otherCAFile}, false},
		{"server name not in certificate", seeds, kafka.TLSConfig{Enabled: true, CAFile: p.caFile, ServerName: "kafka.example.org"}, false},
		{"plaintext to a tls listener", seeds, kafka.TLSConfig{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := connect(t, kafka.Config{Brokers: tc.brokers, TLS: tc.tls})
			switch {
			case tc.ok && err != nil:
				t.Fatalf("connect: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("connect succeeded, want it refused")
			case !tc.ok:
				t.Logf("refused as expected: %v", err)
			}
		})
	}
}

func TestSecurityMutualTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	seeds := newCluster(t, kfake.TLS(&tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientCAs:    p.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}))
	for _, tc := range []struct {
		name string
		tls  kafka.TLSConfig
		ok   bool
	}{
		{"client certificate", kafka.TLSConfig{Enabled: true, CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile}, true},
		{"client certificate implies tls", kafka.TLSConfig{CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile}, true},
		{"no client certificate", kafka.TLSConfig{Enabled: true, CAFile: p.caFile}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := connect(t, kafka.Config{Brokers: seeds, TLS: tc.tls})
			switch {
			case tc.ok && err != nil:
				t.Fatalf("connect: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("connect succeeded, want it refused")
			case !tc.ok:
				t.Logf("refused as expected: %v", err)
			}
		})
	}
}

// TestSecuritySASLOverTLS is the usual production shape (SASL_SSL): SCRAM credentials inside a verified TLS
// connection.
func TestSecuritySASLOverTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	seeds := newCluster(t,
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "svc", "secret"),
	)
	good := kafka.Config{
		Brokers: seeds,
		TLS:     kafka.TLSConfig{Enabled: true, CAFile: p.caFile},
		SASL:    kafka.SASLConfig{Mechanism: "scram-sha-512", Username: "svc", Password: "secret"},
	}
	if err := connect(t, good); err != nil {
		t.Fatalf("connect over TLS with SCRAM: %v", err)
	}
	bad := good
	bad.SASL.Password = "wrong"
	if err := connect(t, bad); err == nil {
		t.Fatal("connect with a wrong password over TLS succeeded, want it refused")
	}
	noTLS := good
	noTLS.TLS = kafka.TLSConfig{}
	if err := connect(t, noTLS); err == nil {
		t.Fatal("SASL without TLS to a TLS listener succeeded, want it refused")
	}
}

// TestSecurityConfigErrors checks that unusable security settings fail in Opts, before any connection is tried.
func TestSecurityConfigErrors(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  kafka.Config
	}{
		{"missing ca file", kafka.Config{TLS: kafka.TLSConfig{Enabled: true, CAFile: filepath.Join(t.TempDir(), "absent.pem")}}},
		{"ca file without certificates", kafka.Config{TLS: kafka.TLSConfig{Enabled: true, CAFile: notPEM}}},
		{"certificate without key", kafka.Config{TLS: kafka.TLSConfig{Enabled: true, CertFile: p.certFile}}},
		{"key without certificate", kafka.Config{TLS: kafka.TLSConfig{Enabled: true, KeyFile: p.keyFile}}},
		{"key that does not match", kafka.Config{TLS: kafka.TLSConfig{Enabled: true, CertFile: p.certFile, KeyFile: p.caFile}}},
		{"unknown sasl mechanism", kafka.Config{SASL: kafka.SASLConfig{Mechanism: "oauthbearer", Username: "u"}}},
		{"sasl without user", kafka.Config{SASL: kafka.SASLConfig{Mechanism: "plain", Password: "p"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tc.cfg.Opts(nil); err == nil {
				t.Fatal("Opts succeeded, want an error")
			} else {
				t.Logf("error as expected: %v", err)
			}
		})
	}
}
