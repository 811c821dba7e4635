import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ResourceServer } from './resource-server.entity';
import { ResourceServersRepository } from './resource-servers.repository';
import { ResourceServersService } from './resource-servers.service';

/** The services that accept Gatehouse's access tokens (docs/resource-servers.md). */
@Module({
  imports: [TypeOrmModule.forFeature([ResourceServer])],
  providers: [ResourceServersRepository, ResourceServersService],
  exports: [ResourceServersService],
})
export class ResourceServersModule {}
