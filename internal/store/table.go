package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxPage is the most rows one page may hold.
const MaxPage = 100

// PageArgs asks for the First rows after the row with id After ("" for the
// start) and before the row with id Before ("" for the end): the First
// nearest After, or with FromEnd the First nearest Before (paging
// backwards; the page is still in the list's order). Callers validate
// First against MaxPage. A caller that will not read whether there are
// more rows beyond the page (Page.HasNext, or HasPrevious with FromEnd)
// sets NoNext: the row past the page, which is read only to tell, is then
// not read.
type PageArgs struct {
	First   int
	After   string
	Before  string
	FromEnd bool
	NoNext  bool
}

// limit is how many rows a read of pg asks for.
func (pg PageArgs) limit() int {
	if pg.NoNext {
		return pg.First
	}
	return pg.First + 1
}

// keyset is what pg's cursors ask of a list of col in order: the
// conditions, their placeholders numbered from $n+1, with their arguments.
func (pg PageArgs) keyset(col, order string, n int) (conds []string, args []any) {
	if pg.After != "" {
		args = append(args, pg.After)
		conds = append(conds, fmt.Sprintf("%s %s $%d", col, after(order), n+len(args)))
	}
	if pg.Before != "" {
		args = append(args, pg.Before)
		conds = append(conds, fmt.Sprintf("%s %s $%d", col, after(reversed(order)), n+len(args)))
	}
	return conds, args
}

// numbered is keyset for a list of numbered rows in order of col, their
// number (an event's, a line's, a drift's): pg's cursors are numbers of
// col. The conditions' placeholders are numbered from $n+1; a cursor that
// is not a number is an error (callers check cursors first).
func (pg PageArgs) numbered(col, order string, n int) (conds []string, args []any, err error) {
	for _, c := range [2]struct{ cursor, cmp string }{{pg.After, after(order)}, {pg.Before, after(reversed(order))}} {
		if c.cursor == "" {
			continue
		}
		v, err := strconv.ParseInt(c.cursor, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("cursor %q is not a number of %s: %w", c.cursor, col, err)
		}
		args = append(args, v)
		conds = append(conds, fmt.Sprintf("%s %s $%d", col, c.cmp, n+len(args)))
	}
	return conds, args, nil
}

// readOrder is the order to read the rows of a list in order: the list's
// reversed when paging from the end.
func (pg PageArgs) readOrder(order string) string {
	if pg.FromEnd {
		return reversed(order)
	}
	return order
}

func reversed(order string) string {
	if order == "DESC" {
		return "ASC"
	}
	return "DESC"
}

// after is the comparison of a row after another in order.
func after(order string) string {
	if order == "DESC" {
		return "<"
	}
	return ">"
}

// Page is one page of rows in the list's order. HasNext tells that rows
// follow it when it was read forwards, HasPrevious that rows precede it
// when it was read from the end; the other is false (Relay's connection
// specification allows this: finding out would be another read).
type Page[T any] struct {
	Items       []*T
	HasNext     bool
	HasPrevious bool
}

// Scanner is what a row scanner reads from.
type Scanner interface{ Scan(dest ...any) error }

// Table describes a table whose primary key is a text id, so that the
// common reads and the insert are written once for every row type.
type Table[K ~string, T any] struct {
	Name    string
	Columns []string
	// keys are the columns every read of some of the columns (Cols)
	// includes: the id and what the row's scope is made of.
	keys   []string
	scan   func(Scanner) (*T, error)
	values func(*T) []any
	id     func(*T) K
}

func (t *Table[K, T]) cols() string { return strings.Join(t.Columns, ", ") }

// Cols is a set of a table's columns, by their places in Table.Columns:
// what a read of some of a row's columns reads. The fields of the other
// columns stay at their zero values, so such rows may be shown only to a
// reader of those fields, and never kept where others find them. The zero
// Cols is the whole row.
type Cols uint64

// Cols is the set of the named columns of t and its keys. It panics on a
// name t does not have: the names are the caller's constants.
func (t *Table[K, T]) Cols(names ...string) Cols {
	var c Cols
	for _, list := range [][]string{names, t.keys} {
		for _, n := range list {
			i := slices.Index(t.Columns, n)
			if i < 0 || i >= 64 {
				panic(fmt.Sprintf("table %s: no column %q to read", t.Name, n))
			}
			c |= 1 << i
		}
	}
	return c
}

// picked is the select list of the columns c of t, each qualified by
// alias unless it is "", and their places in t.Columns (nil for the whole
// row).
func (t *Table[K, T]) picked(alias string, c Cols) ([]string, []int) {
	var names []string
	var at []int
	for i, n := range t.Columns {
		if c != 0 && c&(1<<i) == 0 {
			continue
		}
		if alias != "" {
			n = alias + "." + n
		}
		names = append(names, n)
		if c != 0 {
			at = append(at, i)
		}
	}
	return names, at
}

// Insert stores a new row.
func (t *Table[K, T]) Insert(ctx context.Context, q Querier, v *T) error {
	ph := make([]string, len(t.Columns))
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", t.Name, t.cols(), strings.Join(ph, ", "))
	if _, err := q.Exec(ctx, sql, t.values(v)...); err != nil {
		return fmt.Errorf("inserting into %s: %w", t.Name, err)
	}
	return nil
}

// Get reads one row by id.
func (t *Table[K, T]) Get(ctx context.Context, q Querier, id K) (*T, error) {
	return t.one(ctx, q, "id = $1", string(id))
}

// GetForUpdate reads one row by id and, on PostgreSQL, locks it until the
// transaction ends.
func (t *Table[K, T]) GetForUpdate(ctx context.Context, q Querier, id K) (*T, error) {
	return t.one(ctx, q, "id = $1"+q.Dialect().ForUpdate, string(id))
}

// one reads the single row matching where.
func (t *Table[K, T]) one(ctx context.Context, q Querier, where string, args ...any) (*T, error) {
	items, err := t.query(ctx, q, fmt.Sprintf("SELECT %s FROM %s WHERE %s", t.cols(), t.Name, where), args...)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, ErrNotFound
	}
	return items[0], nil
}

// all reads every row matching where, in id order.
func (t *Table[K, T]) all(ctx context.Context, q Querier, where string, args ...any) ([]*T, error) {
	return t.query(ctx, q, fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY id", t.cols(), t.Name, where), args...)
}

// ByIDs reads the rows with the given ids in one query; missing ids are
// absent from the map.
func (t *Table[K, T]) ByIDs(ctx context.Context, q Querier, ids []K) (map[K]*T, error) {
	out := make(map[K]*T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids, 0)
	items, err := t.query(ctx, q, fmt.Sprintf("SELECT %s FROM %s WHERE id IN (%s)", t.cols(), t.Name, in), args...)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		out[t.id(it)] = it
	}
	return out, nil
}

// list reads one page of the rows matching where (whose placeholders are
// numbered from $1), in id order: oldest first, as ids are time-ordered.
func (t *Table[K, T]) list(ctx context.Context, q Querier, pg PageArgs, where string, args ...any) (Page[T], error) {
	return t.page(ctx, q, pg, "ASC", where, args)
}

// newest is list in reverse: newest first.
func (t *Table[K, T]) newest(ctx context.Context, q Querier, pg PageArgs, where string, args ...any) (Page[T], error) {
	return t.page(ctx, q, pg, "DESC", where, args)
}

func (t *Table[K, T]) page(ctx context.Context, q Querier, pg PageArgs, order, where string, args []any) (Page[T], error) {
	conds, more := pg.keyset("id", order, len(args))
	where = strings.Join(append([]string{"(" + where + ")"}, conds...), " AND ")
	args = append(args, more...)
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY id %s LIMIT $%d", t.cols(), t.Name, where, pg.readOrder(order), len(args)+1)
	items, err := t.query(ctx, q, sql, append(args, pg.limit())...)
	if err != nil {
		return Page[T]{}, err
	}
	return pageOf(items, pg), nil
}

// listByParents reads one page of children for each parent in a single
// query, so that a nested GraphQL list costs one query per level rather than
// one per parent. parentCol is the column holding the parent's id; order is
// "ASC" or "DESC" by id.
func (t *Table[K, T]) listByParents(ctx context.Context, q Querier, parentCol string, parent func(*T) string,
	parents []string, pg PageArgs, order string) (map[string]Page[T], error) {
	return t.listByParentsJoined(ctx, q, parentCol, parent, parents, pg, order, 0, nil)
}

// joined is a row of another table read with each child of listByParents,
// in the same statement: cols are its columns as the select list names them
// (qualified by the join's alias), join the JOIN clause, whose own alias
// for the child is "page"; scan reads them from each row.
type joined struct {
	cols []string
	at   []int // the places of cols in their table's columns; nil for all of them
	join string
	scan func(Scanner) error
}

func (t *Table[K, T]) listByParentsJoined(ctx context.Context, q Querier, parentCol string, parent func(*T) string,
	parents []string, pg PageArgs, order string, cols Cols, with *joined) (map[string]Page[T], error) {
	out := make(map[string]Page[T], len(parents))
	if len(parents) == 0 {
		return out, nil
	}
	if order != "ASC" && order != "DESC" {
		return nil, fmt.Errorf("order %q: want ASC or DESC", order)
	}
	if cols != 0 {
		cols |= t.Cols(parentCol) // the rows are grouped by it
	}
	own, at := t.picked("page", cols)
	inner, _ := t.picked("", cols)
	selected, join := strings.Join(own, ", "), ""
	if with != nil {
		selected += ", " + strings.Join(with.cols, ", ")
		join = " " + with.join
	}
	var sql string
	var args []any
	read := pg.readOrder(order)
	if q.Dialect().Name == "postgres" {
		// One index range per parent, read only as far as the page: the
		// window function below reads every row of every parent first (an
		// environment's whole deployment history for its newest one). The
		// rows are put in order below, by parent, not sorted here.
		args = []any{slices.Compact(slices.Sorted(slices.Values(parents)))}
		conds, more := pg.keyset("id", order, len(args))
		args = append(append(args, more...), pg.limit())
		sql = fmt.Sprintf(`SELECT %[1]s FROM unnest($1::text[]) AS nebula_parents(nebula_parent)
		CROSS JOIN LATERAL (SELECT %[2]s FROM %[5]s WHERE %[6]s ORDER BY id %[4]s LIMIT $%[7]d) page%[8]s`,
			selected, strings.Join(inner, ", "), parentCol, read, t.Name,
			strings.Join(append([]string{parentCol + " = nebula_parent"}, conds...), " AND "), len(args), join)
	} else {
		in, inArgs := inList(parents, 0)
		conds, more := pg.keyset("id", order, len(inArgs))
		args = append(append(inArgs, more...), pg.limit())
		where := strings.Join(append([]string{fmt.Sprintf("%s IN (%s)", parentCol, in)}, conds...), " AND ")
		sql = fmt.Sprintf(`SELECT %[1]s FROM (
		SELECT %[2]s, ROW_NUMBER() OVER (PARTITION BY %[3]s ORDER BY id %[4]s) AS rn FROM %[5]s WHERE %[6]s
	) page%[8]s WHERE page.rn <= $%[7]d ORDER BY page.%[3]s, page.rn`, selected, t.cols(), parentCol, read, t.Name, where, len(args), join)
	}
	var items []*T
	var err error
	if with == nil && at == nil {
		items, err = t.query(ctx, q, sql, args...)
	} else {
		items, err = t.queryJoined(ctx, q, sql, args, at, with)
	}
	if err != nil {
		return nil, err
	}
	// By parent, and within a parent in id order, as the statement read
	// them (ids are UUIDs, ordered alike by the database's collation and by
	// their bytes); each page is a part of items, capped at its end.
	slices.SortFunc(items, func(a, b *T) int {
		if c := strings.Compare(parent(a), parent(b)); c != 0 {
			return c
		}
		if read == "DESC" {
			a, b = b, a
		}
		return strings.Compare(string(t.id(a)), string(t.id(b)))
	})
	for i := 0; i < len(items); {
		p, j := parent(items[i]), i+1
		for j < len(items) && parent(items[j]) == p {
			j++
		}
		out[p] = pageOf(items[i:j:j], pg)
		i = j
	}
	for _, p := range parents {
		if _, ok := out[p]; !ok {
			out[p] = Page[T]{}
		}
	}
	return out, nil
}

// queryJoined reads rows of t, its columns at (nil: all of them), followed
// by the columns of with (nil: none).
func (t *Table[K, T]) queryJoined(ctx context.Context, q Querier, sql string, args []any, at []int, with *joined) ([]*T, error) {
	if with == nil {
		with = &joined{scan: func(Scanner) error { return nil }}
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("querying %s: %w", t.Name, err)
	}
	defer rows.Close()
	mine := len(t.Columns)
	if at != nil {
		mine = len(at)
	}
	total := mine + len(with.cols)
	own := newColumnsAt(rows, 0, total, skipping(q))
	own.at = at
	theirs := newColumnsAt(rows, mine, total, skipping(q))
	theirs.at = with.at
	var out []*T
	for rows.Next() {
		v, err := t.scan(own)
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", t.Name, err)
		}
		if err := with.scan(theirs); err != nil {
			return nil, fmt.Errorf("scanning what %s joins: %w", t.Name, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", t.Name, err)
	}
	return out, nil
}

// columnsAt reads some of a row's columns, from..from+len(dest), through a
// table's own scan function: a joined row is read once per table, each
// read skipping the other's columns. When the statement selected only some
// of the table's columns, at holds their places among the scan function's
// destinations, which are those of all the table's columns; the others
// are left as they are.
type columnsAt struct {
	rows Rows
	from int
	at   []int
	all  []any // the whole row's destinations, others' columns skipped
}

func newColumnsAt(rows Rows, from, total int, skip func() any) *columnsAt {
	c := &columnsAt{rows: rows, from: from, all: make([]any, total)}
	for i := range c.all {
		c.all[i] = skip()
	}
	return c
}

func (c *columnsAt) Scan(dest ...any) error {
	if c.at == nil {
		copy(c.all[c.from:], dest)
	} else {
		for j, i := range c.at {
			c.all[c.from+j] = dest[i]
		}
	}
	return c.rows.Scan(c.all...)
}

// skipping gives what a column is scanned into to be skipped: nil for pgx,
// which then decodes nothing; database/sql needs somewhere to put it.
func skipping(q Querier) func() any {
	if q.Dialect().Name == "postgres" {
		return func() any { return nil }
	}
	return func() any { return new(any) }
}

// qualified names columns of the table aliased as alias.
func qualified(alias string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = alias + "." + c
	}
	return strings.Join(out, ", ")
}

// count counts the rows matching where.
func (t *Table[K, T]) count(ctx context.Context, q Querier, where string, args ...any) (int, error) {
	return count(ctx, q, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", t.Name, where), args...)
}

// Delete removes a row by id; ErrNotFound if there was none.
func (t *Table[K, T]) Delete(ctx context.Context, q Querier, id K) error {
	n, err := q.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE id = $1", t.Name), string(id))
	if err != nil {
		return fmt.Errorf("deleting from %s: %w", t.Name, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func (t *Table[K, T]) query(ctx context.Context, q Querier, sql string, args ...any) ([]*T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("querying %s: %w", t.Name, err)
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := t.scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", t.Name, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", t.Name, err)
	}
	return out, nil
}

// pageOf makes the page of pg from the rows read for it, in the order
// they were read (reversed when paging from the end).
func pageOf[T any](items []*T, pg PageArgs) Page[T] {
	more := len(items) > pg.First
	if more {
		items = items[:pg.First:pg.First]
	}
	if !pg.FromEnd {
		return Page[T]{Items: items, HasNext: more}
	}
	slices.Reverse(items)
	return Page[T]{Items: items, HasPrevious: more}
}

// inList renders "$k+1, $k+2, …" for the values and returns them as args.
func inList[S ~string](vals []S, k int) (string, []any) {
	ph := make([]string, len(vals))
	args := make([]any, len(vals))
	for i, v := range vals {
		ph[i] = fmt.Sprintf("$%d", k+i+1)
		args[i] = string(v)
	}
	return strings.Join(ph, ", "), args
}

func count(ctx context.Context, q Querier, sql string, args ...any) (int, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return 0, fmt.Errorf("counting: %w", err)
	}
	defer rows.Close()
	var n int
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}
