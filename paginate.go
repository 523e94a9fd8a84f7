package wecom

import (
	"context"
	"errors"
	"iter"
	"strings"
)

// A page is what one call of a cursor-paged API returns: its items and the
// cursor of the next page ("" after the last).
type page[T any] struct {
	items []T
	next  string
}

// ErrCursorLoop matches the error of a walk over a paged API that answered a
// cursor it had already answered: following it would never end.
var ErrCursorLoop = errors.New("wecom: the API answered a cursor it had answered before")

// walk yields every item of a cursor-paged API, page after page, in the
// order the API answers them. fetch returns the page at cursor ("" for the
// first).
//
// The walk follows WeCom's stop rule: it ends when the API answers no next
// cursor, and only then. An empty page with a cursor is not the end: the
// walk goes on, so no page is lost. A cursor answered twice ends the walk
// with ErrCursorLoop rather than repeating pages forever.
//
// The first error (from fetch, or ctx's when it ends between pages) is
// yielded once, with the zero item, and ends the walk. Breaking out of the
// loop stops it at once: no further page is fetched.
func walk[T any](ctx context.Context, fetch func(ctx context.Context, cursor string) (page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		seen := make(map[string]bool)
		cursor := ""
		for {
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
			p, err := fetch(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range p.items {
				if !yield(it, nil) {
					return
				}
			}
			if p.next == "" {
				return
			}
			if seen[p.next] {
				yield(zero, ErrCursorLoop)
				return
			}
			seen[p.next] = true
			cursor = p.next
		}
	}
}

// chunk returns the i-th slice of at most n elements of s (nil past the end),
// for the APIs that take at most n ids a call.
func chunk[T any](s []T, i, n int) []T {
	lo := i * n
	if lo >= len(s) {
		return nil
	}
	return s[lo:min(lo+n, len(s))]
}

// distinctIDs returns ids without repeats, keeping the first of each in
// order: the ids of customers and chats, which are exact.
func distinctIDs(ids []string) []string { return distinct(ids, func(id string) string { return id }) }

// distinctUserIDs is distinctIDs for userids, which WeCom compares without
// case.
func distinctUserIDs(ids []string) []string { return distinct(ids, strings.ToLower) }

func distinct(ids []string, key func(string) string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if k := key(id); !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	return out
}
