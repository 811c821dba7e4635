import { Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { REQUEST_OBSERVER, RequestObserver } from '../common/request-logger';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { ConnectionPool, Metrics } from './metrics';
import { MetricsServer } from './metrics.server';

/** TypeORM's PostgreSQL driver keeps its pg Pool as `master`; SQLite has one connection and no pool. */
function connectionPool(dataSource: DataSource): ConnectionPool | undefined {
  if (dataSource.options.type !== 'postgres') return undefined;
  return (dataSource.driver as unknown as { master: ConnectionPool }).master;
}

/** Prometheus metrics (docs/operations.md#metrics, docs/adr/0023-prometheus-metrics.md). */
@Module({
  providers: [
    {
      provide: Metrics,
      inject: [getDataSourceToken()],
      useFactory: (dataSource: DataSource) => new Metrics(connectionPool(dataSource)),
    },
    {
      provide: REQUEST_OBSERVER,
      inject: [APP_CONFIG, Metrics],
      useFactory: (config: AppConfiguration, metrics: Metrics): RequestObserver | null =>
        config.metrics.enabled ? metrics.observeRequest : null,
    },
    MetricsServer,
  ],
  exports: [Metrics],
})
export class MetricsModule {}
