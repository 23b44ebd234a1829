package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group is a consumer group as its coordinator describes it, under either group protocol.
type Group struct {
	// State is the coordinator's name for the group's state ("Stable", "PreparingRebalance", "Reconciling",
	// "Empty", "Dead", ...).
	State string
	// Members are the group's members with the partitions the group assigns them now.
	Members []GroupMember
	// Err is the coordinator's error for the group (kerr.GroupIDNotFound for a group that does not exist).
	Err error
}

// Stable reports whether the group's assignment is settled: every member holds what the group assigns it.
func (g Group) Stable() bool { return g.Err == nil && g.State == "Stable" }

// GroupMember is one member of a Group.
type GroupMember struct {
	MemberID, ClientID, Host string
	// Assigned is what the member holds: topic -> partitions.
	Assigned kadm.TopicsSet
}

// DescribeGroup describes group, whichever its protocol. A group of the classic protocol is described by
// DescribeGroups; a broker answers that a group of the consumer protocol (KIP-848) does not exist (or is Dead),
// so DescribeGroup then asks ConsumerGroupDescribe. A broker without that API (before Kafka 4.0) gets the classic
// answer. The error is the request's; the group's own is Group.Err.
func DescribeGroup(ctx context.Context, adm *kadm.Client, group string) (Group, error) {
	classic, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return Group{}, err
	}
	c, ok := classic[group]
	if !ok {
		c.Err = kerr.GroupIDNotFound
	}
	out := Group{State: c.State, Err: c.Err}
	for _, m := range c.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: kadm.TopicsSet{}}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				gm.Assigned.Add(t.Topic, t.Partitions...)
			}
		}
		out.Members = append(out.Members, gm)
	}
	if !(errors.Is(c.Err, kerr.GroupIDNotFound) || c.Err == nil && c.State == "Dead") {
		return out, nil
	}
	modern, err := adm.DescribeConsumerGroups(ctx, group)
	m, ok := modern[group]
	if err != nil || !ok || errors.Is(m.Err, kerr.GroupIDNotFound) {
		return out, nil // no consumer group either (or a broker that cannot say): the classic answer stands
	}
	out = Group{State: m.State, Err: m.Err}
	for _, mm := range m.Members {
		out.Members = append(out.Members, GroupMember{MemberID: mm.MemberID, ClientID: mm.ClientID, Host: mm.ClientHost, Assigned: mm.Assignment})
	}
	return out, nil
}
