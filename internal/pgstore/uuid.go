package pgstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID teaches a connection's type map github.com/google/uuid,
// the type sqlc generates for every uuid column.
//
// pgx has no plan for uuid.UUID: it is a driver.Valuer and a sql.Scanner,
// and pgx takes those paths for such types rather than their underlying
// [16]byte. Each parameter then went through Value() (a 36-character
// string), a failed binary encode of that string whose error pgx builds
// with fmt, a text parse and the binary encode; each result column was
// formatted as a string and parsed again by Scan. That was 4–5 % of the
// platform's CPU in bcpbench's Pix purchases. The codec below encodes and
// scans the 16 bytes directly and leaves every other value (pgtype.UUID,
// strings, [16]byte, NULLs through pointers) to pgx's own UUID codec.
func registerUUID(_ context.Context, conn *pgx.Conn) error {
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
	return nil
}

type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeUUIDBinary{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanUUIDBinary{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUIDBinary struct{}

func (encodeUUIDBinary) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

type scanUUIDBinary struct{}

func (scanUUIDBinary) Scan(src []byte, dst any) error {
	if src == nil {
		// uuid.UUID's own Scan left dst as it was; sqlc scans into
		// fresh values, where that was the zero UUID too.
		*dst.(*uuid.UUID) = uuid.Nil
		return nil
	}
	if len(src) != 16 {
		return fmt.Errorf("invalid length for uuid: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}
