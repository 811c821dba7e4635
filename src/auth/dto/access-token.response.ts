/** SPEC.md section 2.2 */
export class AccessTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}
