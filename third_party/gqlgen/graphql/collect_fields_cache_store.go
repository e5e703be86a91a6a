package graphql

import (
	"sync"
	"unsafe"

	"github.com/vektah/gqlparser/v2/ast"
)

// collectFieldsCacheKey is the cache key for CollectFields results.
type collectFieldsCacheKey struct {
	selectionPtr  uintptr // Pointer to the underlying SelectionSet data
	selectionLen  int     // Length of the selection set
	satisfiesHash uint64  // Hash of the satisfies array
}

// collectFieldsCacheStore manages CollectFields cache entries safely.
type collectFieldsCacheStore struct {
	mu    sync.RWMutex
	items map[collectFieldsCacheKey][]CollectedField
}

// Get returns the cached result for the key if present.
func (s *collectFieldsCacheStore) Get(key collectFieldsCacheKey) ([]CollectedField, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.items == nil {
		return nil, false
	}
	val, ok := s.items[key]
	return val, ok
}

// Add stores the value when absent and returns the cached value.
func (s *collectFieldsCacheStore) Add(
	key collectFieldsCacheKey,
	value []CollectedField,
) []CollectedField {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.items == nil {
		s.items = make(map[collectFieldsCacheKey][]CollectedField)
	}

	if existing, ok := s.items[key]; ok {
		return existing
	}
	s.items[key] = value
	return value
}

// Len returns the number of cached entries.
func (s *collectFieldsCacheStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// makeCollectFieldsCacheKey generates a cache key for CollectFields.
func makeCollectFieldsCacheKey(selSet ast.SelectionSet, satisfies []string) collectFieldsCacheKey {
	// NEBULA PATCH (5): the address of the slice's data, without boxing
	// the slice into a reflect.Value (an allocation per call).
	selectionPtr := uintptr(unsafe.Pointer(unsafe.SliceData(selSet)))

	// NEBULA PATCH (5): FNV-1a written out, the same hash as hash/fnv's
	// New64a over the same bytes: fnv.New64a escaped to the heap, one
	// allocation for every object of every response.
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, s := range satisfies {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime64
		}
		h *= prime64 // the 0 separator: h ^= 0 changes nothing
	}

	return collectFieldsCacheKey{
		selectionPtr:  selectionPtr,
		selectionLen:  len(selSet),
		satisfiesHash: h,
	}
}
