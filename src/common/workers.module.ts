import { DynamicModule, Global, Module } from '@nestjs/common';
import { COMPILED_DIRECTORY, WORKER_DIRECTORY } from './batching-thread';

/** Where the application's worker threads load their compiled files from (docs/architecture.md#threads). */
@Global()
@Module({})
export class WorkersModule {
  static forRoot(directory: string = COMPILED_DIRECTORY): DynamicModule {
    return {
      module: WorkersModule,
      providers: [{ provide: WORKER_DIRECTORY, useValue: directory }],
      exports: [WORKER_DIRECTORY],
    };
  }
}
