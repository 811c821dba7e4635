import { Module } from '@nestjs/common';
import { ResourceServerGuard } from './resource-server.guard';
import { ResourceServersRepository } from './resource-servers.repository';
import { ResourceServersService } from './resource-servers.service';
import { ResourceServer } from './resource-server.entity';
import { EntitiesModule } from '../database/entities.module';

/** The services that accept Gatehouse's access tokens (docs/resource-servers.md). */
@Module({
  imports: [EntitiesModule.forFeature([ResourceServer])],
  providers: [ResourceServersRepository, ResourceServersService, ResourceServerGuard],
  exports: [ResourceServersService, ResourceServerGuard],
})
export class ResourceServersModule {}
