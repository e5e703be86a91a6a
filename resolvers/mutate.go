package resolvers

import (
	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/graph/gqlmodel"
)

// The helpers below hold the shape most mutations share, so that a resolver
// says only which id it reads and which domain call it makes: read the
// arguments, call the plane only if they were valid, and split the error
// with graph.UserErrors into the payload's userErrors and an error that
// stays an error.

// afterArgs runs do unless reading the arguments failed with err, and
// splits the error of either step.
func afterArgs[T any](err error, do func() (T, error)) (T, []*gqlmodel.UserError, error) {
	var v T
	if err == nil {
		v, err = do()
	}
	ue, err := graph.UserErrors(err)
	return v, ue, err
}

// mutate decodes the global id of the object a mutation acts on (a
// malformed id is a user error on the input field) and runs do with it.
func mutate[K ~string, T any](kind, id, fieldName string, do func(K) (T, error)) (T, []*gqlmodel.UserError, error) {
	k, err := decode[K](kind, id, fieldName)
	return afterArgs(err, func() (T, error) { return do(k) })
}

// remove is mutate for a mutation that deletes the object: the payload
// names the deleted id only when the deletion happened.
func remove[K ~string](kind, id, fieldName string, do func(K) error) (*string, []*gqlmodel.UserError, error) {
	return mutate(kind, id, fieldName, func(k K) (*string, error) {
		if err := do(k); err != nil {
			return nil, err
		}
		return encoded(kind, k), nil
	})
}
