import { ConfigurationError } from '../config/reader';
import { startTracing } from './tracing';

// Imported first by main.ts, so that the instrumentations see http, pg, ioredis and undici load.
try {
  startTracing(process.env);
} catch (error) {
  if (!(error instanceof ConfigurationError)) throw error;
  process.stderr.write(`gatehouse: ${error.message}\n`);
  process.exit(1);
}
