import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { IdentityModule } from '../identity/identity.module';
import { ApiKey } from './api-key.entity';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { LastUsedRecorder } from './last-used.recorder';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), AuditModule, IdentityModule],
  controllers: [ApiKeysController],
  providers: [ApiKeysRepository, ApiKeysService, LastUsedRecorder],
  exports: [ApiKeysService],
})
export class ApiKeysModule {}
