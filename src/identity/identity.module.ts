import { Module } from '@nestjs/common';
import { IdentityRepository } from './identity.repository';
import { IdentityService } from './identity.service';
import { Organization } from './organization.entity';
import { User } from './user.entity';
import { Membership } from './membership.entity';
import { MemberRemoval } from './member-removal.entity';
import { EntitiesModule } from '../database/entities.module';

@Module({
  imports: [EntitiesModule.forFeature([Organization, User, Membership, MemberRemoval])],
  providers: [IdentityRepository, IdentityService],
  exports: [IdentityService],
})
export class IdentityModule {}
