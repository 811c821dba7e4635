import type { DataSource, ObjectLiteral } from 'typeorm';

/** A row as a raw statement returns it: column name -> the driver's value (Date or text, number or text, ...). */
export type RawRow = Record<string, unknown>;

type Convert = (value: unknown) => unknown;

interface Field {
  column: string;
  property: string;
  /** From the row's value (never null) to the entity's. */
  convert: Convert;
  /** From the entity's value (never null) to the one a statement binds (a timestamp's ISO text, a list's JSON). */
  store: Convert;
}

const same: Convert = (value) => value;
/** PostgreSQL returns bigint and numeric as text, SQLite integers as numbers: both become numbers. */
const toNumber: Convert = (value) => Number(value);

/**
 * The mapper of a row to the entity, compiled once per table from its metadata into straight-line code (one assignment
 * per column, as a hand-written mapper has): a loop over the columns took twice as long a row (bench/entity-rows.ts,
 * docs/adr/0051-tables-described-once.md). The code names only the metadata's column and property names, as JSON
 * strings; the values are read from the row, never placed in the code.
 */
function compileMapper<Entity>(entity: new () => Entity, fields: readonly Field[]): (row: RawRow) => Entity {
  const assignments = fields.map((field, i) => {
    const value = `row[${JSON.stringify(field.column)}]`;
    const converted = field.convert === same ? value : `convert[${i}](${value})`;
    return `entity[${JSON.stringify(field.property)}] = ${value} == null ? null : ${converted};`;
  });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the entity's metadata only (above)
  const factory = new Function(
    'Entity',
    'convert',
    `return function toEntity(row) {\n  const entity = new Entity();\n  ${assignments.join('\n  ')}\n  return entity;\n};`,
  ) as (entity: new () => Entity, convert: readonly Convert[]) => (row: RawRow) => Entity;
  return factory(
    entity,
    fields.map((field) => field.convert),
  );
}

/**
 * A table as its entity describes it, the one description of the table in code (docs/adr/0051-tables-described-once.md):
 * the column list of its statements and the mapping of a raw row to the entity, both read from the entity's TypeORM
 * metadata. The repositories keep writing their SQL (docs/adr/0028-one-sql-style.md); a row is mapped by the columns'
 * database names, with each column's number conversion and value transformer (timestamps, JSON lists).
 */
export class EntityRows<Entity extends ObjectLiteral> {
  /** The table's name. */
  readonly table: string;
  /** Every column, in the entity's order, for a SELECT or an INSERT: `id, organization_id, ...`. */
  readonly columns: string;
  /** The database names of the columns, in the same order. */
  readonly columnNames: readonly string[];
  private readonly fields: readonly Field[];

  /** Fails when the entity is not one of the data source's (a feature module registers its own: EntitiesModule). */
  static of<Entity extends ObjectLiteral>(dataSource: DataSource, entity: new () => Entity): EntityRows<Entity> {
    return new EntityRows(dataSource, entity);
  }

  private constructor(dataSource: DataSource, entity: new () => Entity) {
    const metadata = dataSource.getMetadata(entity);
    this.table = metadata.tableName;
    this.fields = metadata.columns.map((column) => {
      const transformer = Array.isArray(column.transformer) ? undefined : column.transformer;
      const numeric = column.type === 'integer' || column.type === 'int' || column.type === 'bigint';
      const from: Convert | undefined =
        transformer === undefined ? undefined : (value): unknown => transformer.from(value) as unknown;
      const convert: Convert =
        numeric && from !== undefined ? (value) => from(toNumber(value)) : numeric ? toNumber : (from ?? same);
      const store: Convert = transformer === undefined ? same : (value): unknown => transformer.to(value) as unknown;
      return { column: column.databaseName, property: column.propertyName, convert, store };
    });
    this.columnNames = this.fields.map((field) => field.column);
    this.columns = this.columnNames.join(', ');
    this.toEntity = compileMapper(entity, this.fields);
  }

  /**
   * The entity as a record of column names (a JSON record of a batch insert, Dialect.jsonRecords): each value as a
   * statement binds it; an absent one is null.
   */
  toRecord(entity: Partial<Entity>): RawRow {
    const record: RawRow = {};
    const values = entity as Record<string, unknown>;
    for (const field of this.fields) {
      const value = values[field.property];
      record[field.column] = value === null || value === undefined ? null : field.store(value);
    }
    return record;
  }

  /** The columns prefixed by a table alias: `k.id, k.organization_id, ...`. */
  columnsOf(alias: string): string {
    return this.columnNames.map((column) => `${alias}.${column}`).join(', ');
  }

  /** The entity a row of every column holds; a null stays null. */
  readonly toEntity: (row: RawRow) => Entity;
}
