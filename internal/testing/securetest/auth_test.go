package securetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// TestBadCredentialsFailFast runs `ticker run` and `worker run` with a wrong password, a CA that did not sign
// the broker's certificate, and without the client certificate the broker requires: each exits 1 within
// seconds with an error that says what was refused, and does not retry.
func TestBadCredentialsFailFast(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	ns := b.namespace(t)
	b.grant(t, rolesOf(shippedACLs(t, ns, ""), "ticker", "worker"))
	otherCA := writeOtherCA(t)
	for _, tc := range []struct {
		name string
		edit func(flags []string) []string
		want string
	}{
		{"wrong password", func(f []string) []string { return setFlag(f, "--sasl-password-file", writeFile(t, "wrong\n")) },
			"SASL_AUTHENTICATION_FAILED"},
		{"unknown user", func(f []string) []string { return setFlag(f, "--sasl-username", "nobody") },
			"SASL_AUTHENTICATION_FAILED"},
		{"wrong CA", func(f []string) []string { return setFlag(f, "--tls-ca", otherCA) },
			"certificate signed by unknown authority"},
		{"no client certificate", func(f []string) []string { return dropFlags(f, "--tls-cert", "--tls-key") },
			"give one with --tls-cert and --tls-key"},
	} {
		for _, bin := range []string{"ticker", "worker"} {
			t.Run(tc.name+"/"+bin, func(t *testing.T) {
				t.Parallel()
				args := []string{"run", "--metrics-addr", ""}
				if bin == "worker" {
					args = append(args, "--exec", "true")
				}
				started := time.Now()
				p := start(t, bin, append(args, tc.edit(b.flags(t, userOf(bin), ns))...)...)
				code := p.exited(15 * time.Second)
				took := time.Since(started)
				out := p.out.String()
				if code != 1 {
					t.Fatalf("exit %d after %v, want 1 within 15 s (-1: still running):\n%s", code, took, out)
				}
				last := lastLine(out)
				if !strings.Contains(last, tc.want) {
					t.Errorf("the error does not say %q:\n%s", tc.want, last)
				}
				t.Logf("exit 1 after %v: %s", took.Round(time.Millisecond), last)
			})
		}
	}
}

// TestMutualTLS shows that the broker requires the client certificate and accepts the one its CA signed: with it
// a client lists the cluster, without it the TLS handshake is refused.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	describe := func(cfgEdit func(*kafka.Config)) error {
		cfg := b.config(t, "admin", "")
		cfgEdit(&cfg)
		opts, err := cfg.Opts(nil)
		if err != nil {
			return err
		}
		cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
		return err
	}
	if err := describe(func(*kafka.Config) {}); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	err := describe(func(c *kafka.Config) { c.TLS.CertFile, c.TLS.KeyFile = "", "" })
	if err == nil || !strings.Contains(err.Error(), "bad certificate") || !strings.Contains(err.Error(), "client certificate") {
		t.Fatalf("without the client certificate: got %v, want the broker's refusal, explained", err)
	}
	t.Logf("without the client certificate: %v", err)
}

func setFlag(flags []string, name, value string) []string {
	out := slices.Clone(flags)
	for i := range out {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

func dropFlags(flags []string, names ...string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		if slices.Contains(names, flags[i]) {
			i++
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// writeOtherCA writes the PEM certificate of a CA that signed nothing the broker has.
func writeOtherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "unrelated CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
}
