import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { AuthModule } from './auth/auth.module';
import { AllExceptionsFilter } from './common/exception.filter';
import { StrictValidationPipe } from './common/validation.pipe';
import { AppConfigModule } from './config/config.module';
import type { Environment } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import { IdentityModule } from './identity/identity.module';

export interface AppModuleOptions {
  /** Exactly this environment instead of process.env and .env (tests, several instances in one process). */
  env?: Environment;
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(options.env),
        DatabaseModule.forRoot(),
        IdentityModule,
        ApiKeysModule,
        AuthModule,
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_PIPE, useClass: StrictValidationPipe },
      ],
    };
  }
}
