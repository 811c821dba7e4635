import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import { type CreatedInvitation, type Invitation, type Member, type Role, ROLES } from '../api/members';
import { ConfirmDialog } from '../components/dialog';
import { Email } from '../components/email';
import { ErrorMessage, LoadStatus, Success } from '../components/feedback';
import { Pager } from '../components/pager';
import { RecordTable } from '../components/record-table';
import { SecretPanel } from '../components/secret-panel';
import { FormActions } from '../components/form-actions';
import { PageHeading } from '../components/page-heading';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { can, type Session } from '../session';

const PAGE_SIZE = 20;

/** The role options, each with what it may do. */
function RoleChoices({ name, value, onChange }: { name: string; value: Role; onChange: (role: Role) => void }) {
  return (
    <ul className="checkboxes">
      {ROLES.map((role) => (
        <li key={role.name}>
          <label className="inline">
            <input
              type="radio"
              name={name}
              value={role.name}
              checked={value === role.name}
              onChange={() => onChange(role.name)}
            />
            <span>
              <strong>{role.name}</strong> <span className="detail">{role.description}</span>
            </span>
          </label>
        </li>
      ))}
    </ul>
  );
}

/** The invitation form: an e-mail address and the role the person gets. */
function InviteForm({
  onCreated,
  onCancel,
}: {
  onCreated: (created: CreatedInvitation) => void;
  onCancel: () => void;
}) {
  const ids = { heading: useId(), email: useId(), hint: useId(), role: useId() };
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { invitation } = await unwrap(
        api.POST('/v1/organization/members/invitations', { body: { email: email.trim(), role } }),
      );
      onCreated(invitation);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} aria-labelledby={ids.heading}>
      <h2 id={ids.heading}>Invite a member</h2>
      <div className="field">
        <label htmlFor={ids.email}>E-mail address</label>
        <input
          id={ids.email}
          type="email"
          required
          maxLength={320}
          autoComplete="off"
          spellCheck={false}
          value={email}
          aria-describedby={ids.hint}
          onChange={(event) => setEmail(event.target.value)}
        />
        <p className="hint" id={ids.hint}>
          You get a one-time link to give them. It works once, for 7 days, and signs them in as a member.
        </p>
      </div>
      <fieldset className="field">
        <legend>Role</legend>
        <RoleChoices name={ids.role} value={role} onChange={setRole} />
      </fieldset>
      <ErrorMessage error={error} />
      <FormActions label="Create invitation link" busyLabel="Creating…" busy={busy} onCancel={onCancel} />
    </form>
  );
}

/** The invitations neither used nor expired, each with a way to withdraw it (members:write). */
function PendingInvitations({
  invitations,
  writable,
  onWithdrawn,
}: {
  invitations: Invitation[];
  writable: boolean;
  onWithdrawn: (invitation: Invitation) => void;
}) {
  const headingId = useId();
  if (invitations.length === 0) return null;
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>Pending invitations</h2>
      <RecordTable
        caption="Pending invitations"
        rows={invitations}
        rowKey={(invitation) => invitation.id}
        testId="invitation"
        empty="No pending invitations."
        columns={[
          { header: 'E-mail', cell: (invitation) => <Email address={invitation.email} /> },
          { header: 'Role', cell: (invitation) => invitation.role },
          { header: 'Invited', cell: (invitation) => formatTime(invitation.created_at) },
          { header: 'Link works until', cell: (invitation) => formatTime(invitation.expires_at) },
        ]}
        actions={
          writable
            ? [
                {
                  label: 'Withdraw',
                  about: (invitation) => `the invitation of ${invitation.email}`,
                  style: 'danger',
                  confirm: {
                    title: (invitation) => `Withdraw the invitation of ${invitation.email}?`,
                    body: () => <p>Its link will sign no one in. You can invite them again later.</p>,
                    confirmLabel: 'Withdraw invitation',
                    danger: true,
                    run: async (invitation) => {
                      await unwrap(
                        api.DELETE('/v1/organization/members/invitations/{id}', {
                          params: { path: { id: invitation.id } },
                        }),
                      );
                      onWithdrawn(invitation);
                    },
                  },
                },
              ]
            : []
        }
      />
    </section>
  );
}

/**
 * The organization's members (members:read; changes: members:write): who they are, their role, when they joined and
 * last signed in; invite one by a one-time link, change a role, remove one. The rules are the server's (the last admin
 * stays, a removal revokes every credential): a refusal is shown as a sentence.
 */
export function MembersPage({ session }: { session: Session }) {
  useTitle('Members');
  const writable = can(session, 'members:write');
  const [page, setPage] = useState(1);
  const [inviting, setInviting] = useState(false);
  const [created, setCreated] = useState<CreatedInvitation>();
  const [changing, setChanging] = useState<{ member: Member; role: Role }>();
  const [done, setDone] = useState<string>();
  const roleName = useId();
  const listId = useId();
  const members = useLoad(
    () => unwrap(api.GET('/v1/organization/members', { params: { query: { page, limit: PAGE_SIZE } } })),
    String(page),
  );
  const invitations = useLoad(() => unwrap(api.GET('/v1/organization/members/invitations')), 'invitations');

  return (
    <>
      <PageHeading
        title="Members"
        action={
          writable && !inviting && created === undefined
            ? {
                label: 'Invite member',
                onClick: () => {
                  setDone(undefined);
                  setInviting(true);
                },
              }
            : undefined
        }
      />
      <p className="lead">The people of {session.organization.name}, and what each may do.</p>
      {inviting && (
        <InviteForm
          onCancel={() => setInviting(false)}
          onCreated={(invitation) => {
            setInviting(false);
            setCreated(invitation);
            invitations.reload();
          }}
        />
      )}
      {created !== undefined && (
        <SecretPanel
          secret={created.url}
          kind="invitation"
          title={`Invitation for ${created.email} (${created.role})`}
          note={`Give this link to ${created.email} yourself. It works once, until ${formatTime(created.expires_at)}: opening it signs them in as a ${created.role}. Anyone who has it can use it.`}
          onDone={() => setCreated(undefined)}
        />
      )}
      {done !== undefined && <Success>{done}</Success>}
      {invitations.data !== undefined && (
        <PendingInvitations
          invitations={invitations.data.invitations}
          writable={writable}
          onWithdrawn={(invitation) => {
            setDone(`The invitation of ${invitation.email} was withdrawn: its link signs no one in.`);
            invitations.reload();
          }}
        />
      )}
      <ErrorMessage error={invitations.error} />
      {members.data !== undefined && (
        <h2 id={listId}>
          {members.data.total_count} member{members.data.total_count === 1 ? '' : 's'}
        </h2>
      )}
      <LoadStatus loaded={members} what="the members" />
      {members.data !== undefined && (
        <>
          <RecordTable
            caption={`Members of ${session.organization.name}`}
            rows={members.data.members}
            rowKey={(member) => member.user_id}
            testId="member"
            empty="No members."
            columns={[
              {
                header: 'Member',
                cell: (member) => (
                  <>
                    <Email address={member.email} />
                    {member.user_id === session.userId && <span className="detail"> (you)</span>}
                    <code className="id detail">{member.user_id}</code>
                  </>
                ),
              },
              { header: 'Role', cell: (member) => member.role },
              { header: 'Joined', cell: (member) => formatTime(member.joined_at) },
              {
                header: 'Last sign-in',
                cell: (member) =>
                  member.last_signed_in_at === null ? (
                    <span className="muted">Not recorded</span>
                  ) : (
                    formatTime(member.last_signed_in_at)
                  ),
              },
            ]}
            actions={
              writable
                ? [
                    {
                      label: 'Change role',
                      about: (member) => `of ${member.email}`,
                      onClick: (member) => {
                        setDone(undefined);
                        setChanging({ member, role: member.role });
                      },
                    },
                    {
                      label: 'Remove',
                      about: (member) => member.email,
                      style: 'danger',
                      confirm: {
                        title: (member) => `Remove ${member.email} from ${session.organization.name}?`,
                        body: (member) => (
                          <p>
                            Their sessions end at once, and every key, workload identity and app access of theirs here
                            is revoked for good: adding them back revives none. Single sign-on will not let them back
                            in; only an admin can.
                            {member.user_id === session.userId && (
                              <strong> This is you: you will be signed out.</strong>
                            )}
                          </p>
                        ),
                        confirmLabel: 'Remove member',
                        danger: true,
                        run: async (member) => {
                          const removed = await unwrap(
                            api.DELETE('/v1/organization/members/{id}', { params: { path: { id: member.user_id } } }),
                          );
                          // Said once the list no longer shows them.
                          await members.reloaded();
                          setDone(
                            `${removed.member.email} removed; ${removed.revoked_keys} key${removed.revoked_keys === 1 ? '' : 's'} revoked.`,
                          );
                        },
                      },
                    },
                  ]
                : []
            }
          />
          <Pager page={page} limit={PAGE_SIZE} total={members.data.total_count} onPage={setPage} label="Members" />
        </>
      )}
      {changing !== undefined && (
        <ConfirmDialog
          title={`Change the role of ${changing.member.email}`}
          confirmLabel="Save role"
          onClose={() => setChanging(undefined)}
          onConfirm={async () => {
            const { member } = await unwrap(
              api.PATCH('/v1/organization/members/{id}', {
                params: { path: { id: changing.member.user_id } },
                body: { role: changing.role },
              }),
            );
            setDone(`${member.email} is now ${member.role === 'admin' ? 'an' : 'a'} ${member.role}.`);
            members.reload();
          }}
        >
          <p>It applies from their next request. An organization keeps at least one admin.</p>
          <fieldset className="field">
            <legend>Role</legend>
            <RoleChoices
              name={roleName}
              value={changing.role}
              onChange={(role) => setChanging({ ...changing, role })}
            />
          </fieldset>
        </ConfirmDialog>
      )}
    </>
  );
}
