import { DataSource } from 'typeorm';
import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';

/** Every table's columns with whether each may be null: `{ table: { column: nullable } }`. */
type Schema = Record<string, Record<string, boolean>>;

async function migratedSchema(dataSource: DataSource): Promise<Schema> {
  const schema: Schema = {};
  if (DATABASE_KIND === 'sqlite') {
    const tables = await dataSource.query<Array<{ name: string }>>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    );
    for (const { name } of tables) {
      const columns = await dataSource.query<Array<{ name: string; notnull: number; pk: number }>>(
        `PRAGMA table_info("${name}")`,
      );
      schema[name] = Object.fromEntries(
        columns.map((column) => [column.name, column.notnull === 0 && column.pk === 0]),
      );
    }
    return schema;
  }
  const columns = await dataSource.query<Array<{ table_name: string; column_name: string; is_nullable: 'YES' | 'NO' }>>(
    `SELECT c.table_name, c.column_name, c.is_nullable FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`,
  );
  for (const column of columns) {
    (schema[column.table_name] ??= {})[column.column_name] = column.is_nullable === 'YES';
  }
  return schema;
}

/**
 * The entities are the one description of the tables in code (docs/adr/0051-tables-described-once.md): every table
 * the migrations make has an entity, registered by its feature module, whose columns are exactly the table's.
 */
describe(`entities and the migrated schema on ${DATABASE_KIND}`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });

  afterAll(() => t.close());

  it('every table has an entity with exactly its columns and their nullability', async () => {
    const dataSource = t.get(DataSource);
    const migrated = await migratedSchema(dataSource);
    // TypeORM's own record of the migrations run.
    delete migrated[dataSource.options.migrationsTableName ?? 'migrations'];
    const described: Schema = {};
    for (const entity of dataSource.entityMetadatas) {
      described[entity.tableName] = Object.fromEntries(
        entity.columns.map((column) => [column.databaseName, column.isNullable]),
      );
    }
    expect(described).toEqual(migrated);
  });
});
