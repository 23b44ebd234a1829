package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// tlsDialer dials brokers with TLS as kgo.DialTLSConfig does (10 s timeout, the broker's host as the server
// name unless one is configured), and explains a broker's refusal of the client certificate. With TLS 1.3 that
// refusal arrives as an alert on the first read after the handshake, "remote error: tls: bad certificate" (Kafka
// sends bad_certificate for a missing certificate as well as for an unknown one), which says nothing about
// client certificates; the error then says what to check.
func tlsDialer(cfg *tls.Config, clientCert bool) func(ctx context.Context, network, host string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		c := cfg.Clone()
		if c.ServerName == "" {
			server, _, err := net.SplitHostPort(host)
			if err != nil {
				return nil, fmt.Errorf("unable to split host:port for dialing: %w", err)
			}
			c.ServerName = server
		}
		conn, err := (&tls.Dialer{NetDialer: d, Config: c}).DialContext(ctx, network, host)
		if err != nil {
			return nil, explainTLS(err, clientCert)
		}
		return &tlsConn{Conn: conn, clientCert: clientCert}, nil
	}
}

type tlsConn struct {
	net.Conn
	clientCert bool
}

func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, explainTLS(err, c.clientCert)
}

func (c *tlsConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, explainTLS(err, c.clientCert)
}

// explainTLS adds a hint to a TLS alert about the client certificate from the broker; other errors pass as they
// are.
func explainTLS(err error, clientCert bool) error {
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "remote error" {
		return err
	}
	msg := op.Err.Error()
	if !strings.Contains(msg, "bad certificate") && !strings.Contains(msg, "certificate required") &&
		!strings.Contains(msg, "unknown certificate authority") {
		return err
	}
	if clientCert {
		return fmt.Errorf("%w (the broker refused the client certificate: is it signed by a CA the broker trusts, and still valid?)", err)
	}
	return fmt.Errorf("%w (the broker refused the connection for want of a client certificate: it requires mutual TLS; give one with --tls-cert and --tls-key)", err)
}
