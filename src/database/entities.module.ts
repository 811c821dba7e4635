import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

/**
 * How a feature module gives the data source its entities (docs/adr/0051-tables-described-once.md): the module that
 * owns a table imports `EntitiesModule.forFeature([Entity])`, and the data source loads every registered entity
 * (`autoLoadEntities`), so that database/ imports no feature. TypeORM's repositories are not exported: the
 * repositories write their own SQL (docs/architecture.md#data-access).
 */
@Module({})
export class EntitiesModule {
  static forFeature(entities: ReadonlyArray<new () => object>): DynamicModule {
    return { module: EntitiesModule, imports: [TypeOrmModule.forFeature([...entities])] };
  }
}
