package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Denied reports whether err is a refusal by the broker's authorizer: an ACL is missing.
func Denied(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// ACLError is a refusal by the broker's authorizer, with the permission that was missing. Kafka's own error
// names neither the resource nor the operation ("GROUP_AUTHORIZATION_FAILED: Not authorized to access group"),
// so the code that knows what it asked for wraps the refusal in one. Asking again does not help until an
// administrator adds the ACL, so the long-running commands stop on it (exit 1) instead of retrying.
type ACLError struct {
	Op, Resource, Name string // e.g. Read, group, tickgroup.workers
	Err                error
}

func (e *ACLError) Error() string {
	return fmt.Sprintf("%v (this principal needs %s on %s %s; see deploy/acls.txt)", e.Err, e.Op, e.Resource, e.Name)
}

func (e *ACLError) Unwrap() error { return e.Err }

// NeedACL returns err as an ACLError naming op on the resource when it is a refusal (Denied), and err otherwise.
func NeedACL(err error, op, resource, name string) error {
	if !Denied(err) {
		return err
	}
	return &ACLError{Op: op, Resource: resource, Name: name, Err: err}
}

// IsACLError reports whether err carries an ACLError.
func IsACLError(err error) bool {
	var ae *ACLError
	return errors.As(err, &ae)
}
