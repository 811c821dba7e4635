import { Column, ColumnOptions, ValueTransformer } from 'typeorm';

/** Timestamps are `timestamptz` on PostgreSQL and ISO 8601 text on SQLite (see the migrations). */
const timestampTransformer: ValueTransformer = {
  to: (value: Date | null | undefined) => (value instanceof Date ? value.toISOString() : value),
  from: (value: Date | string | null) => (value === null || value instanceof Date ? value : new Date(value)),
};

export function TimestampColumn(options: Pick<ColumnOptions, 'name' | 'nullable'> = {}): PropertyDecorator {
  return Column({ type: 'varchar', transformer: timestampTransformer, nullable: false, ...options });
}

/** A timestamp column as a raw query returns it (Date on PostgreSQL, ISO 8601 text on SQLite). */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}
