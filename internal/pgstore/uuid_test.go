package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/bcpdev/bcp/internal/pgstore"
	"github.com/bcpdev/bcp/internal/testdb"
)

// uuid.UUID goes to and from PostgreSQL as its 16 bytes: pooled
// connections plan it with the registered codec, not through
// driver.Valuer and sql.Scanner (strings formatted and parsed, and an
// error built with fmt on every parameter), and the values survive
// every shape the stores use.
func TestUUIDsTravelAsBytes(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := conn.Conn().TypeMap()
	if plan := m.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, uuid.UUID{}); plan == nil || planName(plan) != "pgstore.encodeUUIDBinary" {
		t.Errorf("uuid.UUID parameters are planned as %s, want pgstore.encodeUUIDBinary", planName(plan))
	}
	if plan := m.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, new(uuid.UUID)); plan == nil || planName(plan) != "pgstore.scanUUIDBinary" {
		t.Errorf("uuid.UUID results are planned as %s, want pgstore.scanUUIDBinary", planName(plan))
	}
	conn.Release()

	a, b := uuid.MustParse("0b6f2f5e-6a53-4c1e-9a51-2f0f3a7c9d10"), uuid.MustParse("ffffffff-0000-4000-8000-000000000001")
	var (
		echo     uuid.UUID
		text     string
		arr      []uuid.UUID
		null     uuid.UUID = a
		nullable *uuid.UUID
		any_     bool
	)
	err = pgstore.InRegistry(ctx, d.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT $1::uuid, $1::uuid::text`, a).Scan(&echo, &text); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT $1::uuid[]`, []uuid.UUID{a, b}).Scan(&arr); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT $1::uuid = ANY($2::uuid[])`, b, []uuid.UUID{a, b}).Scan(&any_); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&null); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT $1::uuid`, (*uuid.UUID)(nil)).Scan(&nullable)
	})
	if err != nil {
		t.Fatal(err)
	}
	if echo != a || text != a.String() {
		t.Errorf("round trip: %s, as text %q; want %s", echo, text, a)
	}
	if len(arr) != 2 || arr[0] != a || arr[1] != b || !any_ {
		t.Errorf("array: %v, ANY %v; want [%s %s], true", arr, any_, a, b)
	}
	if null != uuid.Nil || nullable != nil {
		t.Errorf("NULL scanned as %s and %v; want the zero UUID and nil", null, nullable)
	}
}

func planName(p any) string {
	if p == nil {
		return "nothing"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", p), "*")
}

// BenchmarkUUIDRoundTrip sends three uuid parameters and scans three uuid
// results, as a typical store call does, with the registered codec
// ("codec", pooled connections) and with pgx's defaults ("valuer").
// Most of the time is the round trip; compare allocs/op and B/op.
func BenchmarkUUIDRoundTrip(b *testing.B) {
	d := testdb.New(b)
	ctx := context.Background()
	plain, err := pgx.Connect(ctx, d.AppURL)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close(ctx)
	pooled, err := d.Pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer pooled.Release()
	x, y, z := uuid.New(), uuid.New(), uuid.New()
	for _, c := range []struct {
		name string
		conn *pgx.Conn
	}{{"codec", pooled.Conn()}, {"valuer", plain}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var p, q, r uuid.UUID
			for b.Loop() {
				if err := c.conn.QueryRow(ctx, `SELECT $1::uuid, $2::uuid, $3::uuid`, x, y, z).Scan(&p, &q, &r); err != nil {
					b.Fatal(err)
				}
			}
			if p != x || q != y || r != z {
				b.Fatalf("got %s %s %s", p, q, r)
			}
		})
	}
}
