package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/wecomkit/wecom"
)

// walked is what the walk over the members' customers found. The feeder
// writes it; it is read once the feed has ended.
type walked struct {
	members        []string
	found          map[string]bool // members with a pair, lower case
	pairs, already int
	err            error // what ended the walk early, a stop aside
	stoppedWalking bool  // a stop came before the walk ended
}

// memberCustomers returns the feeder of the -members and -all-members
// modes: it walks every customer of every member with batch/get_by_user
// and hands out a mark for each (member, customer) pair not marked yet, as
// the pages come, so that marking starts with the first page.
func memberCustomers(c *wecom.Client, tagID string, w *walked) feeder {
	return func(stop context.Context, jobs chan<- job, n *counts) {
		for mc, err := range c.Customers.ByMembers(stop, w.members) {
			if err != nil {
				if stop.Err() != nil {
					w.stoppedWalking = true
				} else {
					w.err = err
				}
				return
			}
			w.pairs++
			w.found[strings.ToLower(mc.Follow.UserID)] = true
			if slices.Contains(mc.Follow.TagIDs, tagID) {
				w.already++
				continue
			}
			n.queued.Add(1)
			if !handOut(stop, jobs, job{mc.Follow.UserID, mc.Contact.ExternalUserID}) {
				w.stoppedWalking = true
				return
			}
		}
	}
}

// members returns the members whose customers to mark: those -members
// names (spaces trimmed, each once), or with -all-members every member who
// has customers.
func members(ctx context.Context, c *wecom.Client, cfg config) ([]string, error) {
	if cfg.allMembers {
		return c.Customers.FollowUsers(ctx)
	}
	var out []string
	seen := make(map[string]bool)
	for _, u := range strings.Split(cfg.members, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			return nil, fmt.Errorf("-members %q: an empty userid", cfg.members)
		}
		if k := strings.ToLower(u); !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	return out, nil
}

// print writes what the walk found, in pages of batch/get_by_user.
func (w *walked) print(out io.Writer, pages int64) {
	fmt.Fprintf(out, "customers:  %d pairs found for %d members in %d pages of batch/get_by_user; %d already marked, %d to mark\n",
		w.pairs, len(w.members), pages, w.already, w.pairs-w.already)
	var none []string
	for _, u := range w.members {
		if !w.found[strings.ToLower(u)] {
			none = append(none, u)
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(out, "no customers: %d of the members had none the app can see: %s\n", len(none), strings.Join(none, ", "))
	}
	switch {
	case w.err != nil:
		fmt.Fprintf(out, "walk:       ended early, customers may be missing: %v\n", w.err)
	case w.stoppedWalking:
		fmt.Fprintf(out, "walk:       stopped before every customer was found\n")
	}
}
