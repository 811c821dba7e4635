import { DynamicModule, Global, Inject, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { AppConfiguration, ConfigurationDefaults, Environment, loadConfiguration } from './configuration';
import { resolveSecrets, Secrets } from './local-secrets';

export const APP_CONFIG = Symbol('APP_CONFIG');
export const SECRETS = Symbol('SECRETS');

export const InjectConfig = (): ParameterDecorator => Inject(APP_CONFIG);
export const InjectSecrets = (): ParameterDecorator => Inject(SECRETS);

@Global()
@Module({})
export class AppConfigModule {
  /**
   * `env` given (tests, a second instance in one process): exactly that environment, no .env file.
   * Otherwise the process environment, after @nestjs/config has loaded an optional `.env` file.
   */
  static forRoot(env?: Environment, defaults: ConfigurationDefaults = {}): DynamicModule {
    return {
      module: AppConfigModule,
      imports: env === undefined ? [ConfigModule.forRoot({ envFilePath: '.env', cache: true })] : [],
      providers: [
        { provide: APP_CONFIG, useFactory: () => loadConfiguration(env ?? process.env, defaults) },
        { provide: SECRETS, useFactory: (config: AppConfiguration) => resolveSecrets(config), inject: [APP_CONFIG] },
      ],
      exports: [APP_CONFIG, SECRETS],
    };
  }
}

export type { AppConfiguration, Secrets };
