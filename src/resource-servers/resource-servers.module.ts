import { Module } from '@nestjs/common';
import { ResourceServerGuard } from './resource-server.guard';
import { ResourceServersRepository } from './resource-servers.repository';
import { ResourceServersService } from './resource-servers.service';

/** The services that accept Gatehouse's access tokens (docs/resource-servers.md). */
@Module({
  providers: [ResourceServersRepository, ResourceServersService, ResourceServerGuard],
  exports: [ResourceServersService, ResourceServerGuard],
})
export class ResourceServersModule {}
