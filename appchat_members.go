package wecom

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// KnownChatTTL is how long the client counts an app group chat's messages
// on the members it knows of the chat (from AppChats.Create, Update or
// Get) before it reads them again: a change made elsewhere is counted
// within this long.
const KnownChatTTL = 5 * time.Minute

// maxKnownChats bounds the chats a client remembers; the oldest goes first.
const maxKnownChats = 1024

// chatBook remembers the members of the app group chats a client created,
// changed or read: appchat/send names only its chat, and its limits count
// the chat's members. Safe for concurrent use; the zero value is empty.
type chatBook struct {
	mu    sync.Mutex
	chats map[string]knownChat
}

// knownChat is what a client knows of a chat: its members, as of at.
type knownChat struct {
	members []string
	at      time.Time
}

// get returns the members of chat id, if the book knows them as of at
// most KnownChatTTL before now.
func (b *chatBook) get(id string, now time.Time) ([]string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.chats[id]
	if !ok || now.Sub(k.at) >= KnownChatTTL || now.Before(k.at) {
		return nil, false
	}
	return slices.Clone(k.members), true
}

// put records the members of chat id as of now, making room by forgetting
// the chat known the longest.
func (b *chatBook) put(id string, members []string, now time.Time) {
	if id == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.chats == nil {
		b.chats = make(map[string]knownChat)
	}
	if _, ok := b.chats[id]; !ok && len(b.chats) >= maxKnownChats {
		oldest, at := "", time.Time{}
		for cid, k := range b.chats {
			if oldest == "" || k.at.Before(at) {
				oldest, at = cid, k.at
			}
		}
		delete(b.chats, oldest)
	}
	b.chats[id] = knownChat{members: distinctUserIDs(members), at: now}
}

// change applies a successful update to the members the book knows of
// chat id, if it knows them; they stay as old as they were.
func (b *chatBook) change(id string, add, del []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.chats[id]
	if !ok {
		return
	}
	ms := slices.DeleteFunc(slices.Clone(k.members), func(m string) bool {
		return slices.ContainsFunc(del, func(d string) bool { return strings.EqualFold(d, m) })
	})
	k.members = distinctUserIDs(append(ms, add...))
	b.chats[id] = k
}

// forget drops what the book knows of chat id.
func (b *chatBook) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.chats, id)
}
