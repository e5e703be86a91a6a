package model

import (
	"slices"
	"strings"
)

// Label is one key=value pair. Selectors match labels exactly.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Labels is kept sorted by key with unique keys (see NewLabels).
type Labels []Label

// NewLabels sorts the pairs by key. It keeps duplicates; validation rejects them.
func NewLabels(pairs []Label) Labels {
	out := append(Labels{}, pairs...)
	slices.SortStableFunc(out, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Get returns the value for key.
func (ls Labels) Get(key string) (string, bool) {
	for _, l := range ls {
		if l.Key == key {
			return l.Value, true
		}
	}
	return "", false
}

// Matches reports whether ls holds every pair of selector exactly. An empty
// selector matches everything.
func (ls Labels) Matches(selector Labels) bool {
	for _, s := range selector {
		if v, ok := ls.Get(s.Key); !ok || v != s.Value {
			return false
		}
	}
	return true
}
