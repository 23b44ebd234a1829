package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveStatic removes a static member (instanceID) from group, as memberID when it has one: kgo's Close does
// not send LeaveGroup for a static member, so a graceful stop must.
//
// The member ID matters when another process has taken the instance ID over (a replica started with the same
// ID takes the membership and its assignment at once, and this one may not have heard yet): by the instance
// ID alone the coordinator would remove the newer process; with the member ID it removes nothing and answers
// FENCED_INSTANCE_ID (kerr.FencedInstanceID is returned). A membership without a member ID (it never joined,
// or it is between an UNKNOWN_MEMBER_ID answer and its rejoin) leaves by the instance ID alone, and can then
// still remove a newer process that holds the ID.
func LeaveStatic(ctx context.Context, cl *kgo.Client, group, instanceID, memberID, reason string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = memberID
	m.InstanceID = kmsg.StringPtr(instanceID)
	m.Reason = kmsg.StringPtr(reason)
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, m := range resp.Members {
		if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}
