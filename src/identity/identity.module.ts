import { Module } from '@nestjs/common';
import { IdentityRepository } from './identity.repository';
import { IdentityService } from './identity.service';

@Module({
  providers: [IdentityRepository, IdentityService],
  exports: [IdentityService],
})
export class IdentityModule {}
