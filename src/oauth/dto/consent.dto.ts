import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsString, MaxLength } from 'class-validator';
import type { ConsentDescription } from '../authorization.service';

const MAX_REQUEST = 8192;

/** GET /v1/oauth/consent's query: the request the authorization endpoint handed to the consent page. */
export class ConsentQuery {
  @ApiProperty({ description: "The `request` of the consent page's address" })
  @IsString()
  @MaxLength(MAX_REQUEST)
  request: string;
}

/** POST /v1/oauth/consent: the person's decision. */
export class ConsentDecisionDto {
  @ApiProperty({ description: "The `request` of the consent page's address" })
  @IsString()
  @MaxLength(MAX_REQUEST)
  request: string;

  @ApiProperty({ enum: ['allow', 'deny'] })
  @IsIn(['allow', 'deny'])
  decision: 'allow' | 'deny';
}

export class ConsentClientView {
  @ApiProperty()
  client_id: string;
  @ApiProperty({ description: 'The name the client gives itself: untrusted, shown beside host' })
  client_name: string;
  @ApiProperty({ type: String, nullable: true, description: "The client_id URL's host" })
  host: string | null;
  @ApiPropertyOptional({ type: String, nullable: true })
  logo_uri: string | null;
  @ApiProperty({
    enum: ['document', 'dynamic', 'organization'],
    description:
      'How Gatehouse knows it: its client_id is a metadata document URL (`host`), it registered itself (RFC 7591), ' +
      "or the organization's admins registered it",
  })
  registration: 'document' | 'dynamic' | 'organization';
  @ApiProperty({ description: "Where the browser goes back to: the redirect URI's host" })
  redirect_host: string;
}

export class ConsentScopeView {
  @ApiProperty()
  name: string;
  @ApiProperty()
  description: string;
}

export class ConsentResourceView {
  @ApiProperty()
  audience: string;
  @ApiProperty()
  name: string;
}

export class ConsentOrganizationView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty()
  name: string;
}

/** What the consent page shows. */
export class ConsentView {
  @ApiProperty({ type: ConsentClientView })
  client: ConsentClientView;
  @ApiProperty({ type: ConsentResourceView })
  resource: ConsentResourceView;
  @ApiProperty({ type: [ConsentScopeView] })
  scopes: ConsentScopeView[];
  @ApiProperty({ type: ConsentOrganizationView })
  organization: ConsentOrganizationView;
  @ApiProperty({ description: 'An earlier consent of this person covers it' })
  remembered: boolean;

  static from(consent: ConsentDescription): ConsentView {
    const { client } = consent;
    return {
      client: {
        client_id: client.clientId,
        client_name: client.name,
        host: client.host,
        logo_uri: client.logoUri,
        registration: client.registration,
        redirect_host: consent.redirectHost,
      },
      resource: consent.resource,
      scopes: consent.scopes,
      organization: consent.organization,
      remembered: consent.remembered,
    };
  }
}

export class ConsentDecisionResponse {
  @ApiProperty({ description: "Where the browser goes next: the client's redirect URI with code or error, state, iss" })
  redirect_to: string;
}
