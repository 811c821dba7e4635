import { Module } from '@nestjs/common';
import { CredentialsModule } from '../credentials/credentials.module';
import { AuditModule } from '../audit/audit.module';
import { EntitiesModule } from '../database/entities.module';
import { IdentityModule } from '../identity/identity.module';
import { MemberInvitation } from './member-invitation.entity';
import { MemberInvitationsRepository } from './member-invitations.repository';
import { MembersController } from './members.controller';
import { MembersService } from './members.service';

/**
 * The member lifecycle (docs/adr/0044-one-member-lifecycle.md): adding, inviting, changing a role and removing a
 * member, for the admin CLI, single sign-on's just-in-time membership and the API alike.
 */
@Module({
  imports: [EntitiesModule.forFeature([MemberInvitation]), IdentityModule, AuditModule, CredentialsModule],
  controllers: [MembersController],
  providers: [MembersService, MemberInvitationsRepository],
  exports: [MembersService],
})
export class MembersModule {}
