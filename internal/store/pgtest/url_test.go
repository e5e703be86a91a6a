package pgtest

import "testing"

func TestWithDatabase(t *testing.T) {
	tests := []struct {
		base, want string
	}{
		{"postgres://u:p%40ss@db.example.com:5433/postgres?sslmode=disable",
			"postgres://u:p%40ss@db.example.com:5433/t_1?sslmode=disable"},
		{"postgresql://u@localhost", "postgresql://u@localhost/t_1"},
		{"host=/run/postgresql user=postgres dbname=postgres", "host=/run/postgresql user=postgres dbname=postgres dbname=t_1"},
	}
	for _, tc := range tests {
		got, err := withDatabase(tc.base, "t_1")
		if err != nil {
			t.Errorf("withDatabase(%q): %v", tc.base, err)
			continue
		}
		if got != tc.want {
			t.Errorf("withDatabase(%q): got %q, want %q", tc.base, got, tc.want)
		}
	}
}
