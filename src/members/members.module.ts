import { Module } from '@nestjs/common';
import { CredentialsModule } from '../credentials/credentials.module';
import { AuditModule } from '../audit/audit.module';
import { IdentityModule } from '../identity/identity.module';
import { MembersService } from './members.service';

/**
 * The member lifecycle (docs/adr/0044-one-member-lifecycle.md): adding, changing a role and removing a member, for the
 * admin CLI, single sign-on's just-in-time membership and the API alike.
 */
@Module({
  imports: [IdentityModule, AuditModule, CredentialsModule],
  providers: [MembersService],
  exports: [MembersService],
})
export class MembersModule {}
