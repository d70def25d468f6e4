/**
 * The players section of the staff console: search by name, email or chat ID, a player's profile,
 * and roles granted and revoked (with expiry). Support staff may look players up; changes are for
 * admins. What other features hold of a player (the credits feature's balance and ledger) they
 * show through panels on the player's page (PlayerPanel in contract.ts).
 */
import { Type, type Static } from '@sinclair/typebox';
import { errorsFor, field, type ConsolePage, type ConsolePages, type ConsoleRequest, type ConsoleSection, idOf, recordPages } from '../../core/console.ts';
import { displayTimestamp, PERMANENT } from '../../core/format.ts';
import type { PanelForm, PlayerPanel, Role, UserAccount } from './contract.ts';
import { newRole, parseExpiry, patchOf, RoleCreateBody, RolePatchBody } from './schemas.ts';
import type { DbUsersService } from './service.ts';

const PAGE = 50;

const GrantBody = Type.Object({
  roleID: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  expiryDate: Type.Optional(Type.String()),
});

/** A form shown again with its errors: the role grant, or one panel's. */
type Failed = { grant: PanelForm } | { panel: PlayerPanel; form: PanelForm };

export const playersSection: ConsoleSection<unknown, DbUsersService> = {
  id: 'players',
  title: 'Players',
  order: 30,
  access: 'support',
  pages(pages, { settings }, users) {
    const pp: PlayerPages = { pages, users, tz: () => settings.get().timezone };
    pages.dashboard(async () => (await Promise.all(users.playerPanels.map((p) => p.dashboard?.() ?? []))).flat());
    searchPage(pp);
    profileRoutes(pp);
    roleGrantRoutes(pp);
  },
};

/** What each group of pages works with. */
interface PlayerPages {
  pages: ConsolePages;
  users: DbUsersService;
  tz: () => string;
}

/** The section's first page: players found by name, email or chat ID, a page at a time. */
function searchPage({ pages, users, tz }: PlayerPages): void {
  pages.get('', async ({ query }) => {
    const q = (query.q ?? '').trim().slice(0, 191);
    const found = await users.searchAccounts(q, { after: query.after || undefined, limit: PAGE });
    const link = (extra: Record<string, string>) => `${pages.base}?${new URLSearchParams({ ...(q ? { q } : {}), ...extra })}`;
    return {
      title: 'Players',
      blocks: [
        {
          kind: 'form',
          id: 'player-search',
          title: 'Find a player',
          method: 'get',
          action: pages.base,
          submit: 'Search',
          values: { q },
          fields: [{ name: 'q', label: 'Name, email or chat ID', type: 'search', hint: 'The start of a username or email, or a whole chat user ID.' }],
        },
        {
          kind: 'table',
          caption: q ? `Players matching "${q}"` : 'Players by name',
          empty: 'No player matches.',
          columns: [
            { key: 'name', label: 'Username' },
            { key: 'email', label: 'Email' },
            { key: 'chat', label: 'Chat ID' },
            { key: 'created', label: 'Registered' },
          ],
          rows: found.map((u) => ({
            name: { text: u.username, href: `${pages.base}/${u.id}` },
            email: u.email ?? '',
            chat: u.linkedAccounts.chat ?? '',
            created: displayTimestamp(u.creationDate, tz()),
          })),
          next: found.length === PAGE ? link({ after: found.at(-1)!.username }) : undefined,
          first: query.after ? link({}) : undefined,
        },
      ],
    };
  });
}

/** A player's profile: links to their tickets and orders, their roles (a grant form for admins), and the other features' panels. */
async function profile(
  { pages, users, tz }: PlayerPages,
  user: UserAccount,
  request: Pick<ConsoleRequest, 'query' | 'staff'>,
  failed?: Failed,
): Promise<ConsolePage> {
  const panels = users.playerPanels;
  const admin = request.staff.access === 'admin';
  const href = `${pages.base}/${user.id}`;
  const grant = failed && 'grant' in failed ? failed.grant : undefined;
  const [held, roles, ...shares] = await Promise.all([
    users.rolesOf(user.id),
    admin ? users.listRoles() : [],
    ...panels.map((panel) =>
      panel.view({
        player: user,
        href,
        query: request.query,
        staff: request.staff,
        failed: failed && 'panel' in failed && failed.panel === panel ? failed.form : undefined,
      }),
    ),
  ]);
  // The orders section is for admins; the support desk for both.
  const tickets = pages.href('support', `?${new URLSearchParams({ player: String(user.id) })}`);
  const orders = admin ? pages.href('orders', `?${new URLSearchParams({ username: user.username })}`) : undefined;
  const elsewhere = [
    ...(tickets ? [{ label: `Tickets of ${user.username}`, href: tickets }] : []),
    ...(orders ? [{ label: `Orders of ${user.username}`, href: orders }] : []),
  ];
  return {
    title: user.username,
    status: failed ? 422 : 200,
    blocks: [
      ...(elsewhere.length ? [{ kind: 'links' as const, items: elsewhere }] : []),
      {
        kind: 'stats',
        items: [
          { label: 'email', value: user.email ?? 'none' },
          { label: 'chat ID', value: user.linkedAccounts.chat ?? 'not linked' },
          { label: 'two-factor', value: user.authStatus === 1 ? 'on' : 'off' },
          { label: 'registered', value: displayTimestamp(user.creationDate, tz()) },
          ...shares.flatMap((share) => share.stats ?? []),
        ],
      },
      {
        kind: 'table',
        caption: 'Roles held',
        empty: 'No role.',
        columns: [{ key: 'name', label: 'Role' }, { key: 'expiry', label: 'Expires' }, ...(admin ? [{ key: 'revoke', label: 'Revoke' }] : [])],
        rows: held.map((r) => ({
          name: r.name,
          expiry: r.expiryDate === PERMANENT ? 'never' : displayTimestamp(r.expiryDate, tz()),
          ...(admin
            ? { revoke: { action: `${href}/roles/${r.id}/revoke`, label: `Revoke ${r.name}`, confirm: `Take the role ${r.name} from ${user.username}?` } }
            : {}),
        })),
      },
      ...(admin
        ? [
            {
              kind: 'form' as const,
              id: 'grant-role',
              title: 'Grant a role',
              action: `${href}/roles`,
              submit: 'Grant role',
              values: grant?.values ?? {},
              errors: grant?.errors,
              fields: [
                {
                  name: 'roleID',
                  label: 'Role',
                  type: 'select' as const,
                  required: true,
                  placeholder: 'Choose a role',
                  options: roles.map((r) => ({ value: String(r.id), label: r.name })),
                },
                {
                  name: 'expiryDate',
                  label: 'Expires',
                  type: 'datetime' as const,
                  hint: `Site time (${tz()}); empty = never. Granting a held role sets its expiry.`,
                },
              ],
            },
          ]
        : []),
      ...shares.flatMap((share) => share.blocks ?? []),
    ],
  };
}

/** A player's profile shown, and the changes their panels offer. */
function profileRoutes(pp: PlayerPages): void {
  const { pages, users } = pp;
  pages.get('/:id', async (request) => profile(pp, await users.requireById(idOf(request.params.id)), request));

  // A panel's changes: the player first (an unknown one is a 404 whatever the form), then the
  // form's schema, then the change; a refused one shows the page again with the panel's form.
  for (const panel of users.playerPanels) {
    for (const action of panel.actions ?? []) {
      pages.post(
        `/:id/${action.path}`,
        async (request) => {
          const user = await users.requireById(idOf(request.params.id));
          const shown = { ...request, query: {} };
          const again = (errors: Record<string, string>) => profile(pp, user, shown, { panel, form: { values: request.form, errors } });
          if (request.invalid) return again(request.invalid);
          const done = await action.run(user, request);
          return 'notice' in done ? { redirect: `${pages.base}/${user.id}`, notice: done.notice } : again(done.errors);
        },
        { access: action.access ?? 'admin', body: action.body },
      );
    }
  }
}

/** A role granted to a player (with its expiry) and one revoked. */
function roleGrantRoutes(pp: PlayerPages): void {
  const { pages, users, tz } = pp;
  pages.post(
    '/:id/roles',
    async (request) => {
      const { params, body, invalid, form } = request;
      const user = await users.requireById(idOf(params.id));
      const shown = { ...request, query: {} };
      if (invalid) return profile(pp, user, shown, { grant: { values: form, errors: invalid } });
      const b = body as Static<typeof GrantBody>;
      try {
        const expiry = parseExpiry(b.expiryDate, tz());
        await users.grantRole(user.id, b.roleID, expiry, { admin: request.staff.access === 'admin' });
        const role = await users.getRole(b.roleID);
        return {
          redirect: `${pages.base}/${user.id}`,
          notice: `${user.username} holds ${role?.name ?? 'the role'}${expiry && expiry !== PERMANENT ? ` until ${displayTimestamp(expiry, tz())}` : ''}.`,
        };
      } catch (err) {
        return profile(pp, user, shown, { grant: { values: form, errors: errorsFor(err, ['roleID', 'expiryDate'], { ROLE_NOT_FOUND: 'roleID' }) } });
      }
    },
    { access: 'admin', body: GrantBody },
  );

  pages.post(
    '/:id/roles/:roleId/revoke',
    async ({ params }) => {
      const user = await users.requireById(idOf(params.id));
      const role = await users.getRole(idOf(params.roleId));
      const revoked = role ? await users.revokeRole(user.id, role.id) : false;
      return {
        redirect: `${pages.base}/${user.id}`,
        notice: revoked ? `${role!.name} taken from ${user.username}.` : `${user.username} did not hold that role.`,
      };
    },
    { access: 'admin' },
  );
}

const ROLE_FIELDS = [
  { name: 'name', label: 'Name', required: true },
  {
    name: 'slug',
    label: 'Slug',
    hint: "Lower-case letters, digits, - and _; made from the name when empty. The console's roles are named by slug in " + 'plugins.console.',
  },
  { name: 'priority', label: 'Priority', type: 'number' as const, hint: 'Higher shows first; 0 when empty.' },
  { name: 'chatRoleID', label: 'Chat role ID', hint: "The chat platform's role given to holders; empty for none." },
  { name: 'usernameCSS', label: 'Username CSS', type: 'textarea' as const, hint: "Style of a holder's name on the website; empty for none." },
  { name: 'badgeCSS', label: 'Badge CSS', type: 'textarea' as const, hint: "Style of the role's badge; empty for none." },
];

/**
 * Roles, created, edited and deleted with the admin API's schemas. The section is for admins
 * only, so a role that opens the console (or that a feature marks privileged) is changed by an
 * admin alone.
 */
export const rolesSection: ConsoleSection<unknown, DbUsersService> = {
  id: 'roles',
  title: 'Roles',
  order: 35,
  pages(pages, _ctx, users) {
    recordPages<Role>(pages, {
      path: '',
      title: 'Roles',
      noun: 'role',
      fields: ROLE_FIELDS,
      columns: [
        { key: 'slug', label: 'Slug' },
        { key: 'priority', label: 'Priority', numeric: true },
        { key: 'privileged', label: 'Privileged' },
      ],
      createBody: RoleCreateBody,
      editBody: RolePatchBody,
      list: () => users.listRoles(),
      get: (id) => users.requireRole(id),
      create: ({ body }) => users.createRole(newRole(body as Static<typeof RoleCreateBody>)),
      update: (id, { body, form }) => {
        const patch = patchOf(body as Static<typeof RolePatchBody>);
        // An emptied optional field clears it (empty fields are otherwise not sent).
        if ('chatRoleID' in form && !field(form, 'chatRoleID')) patch.chatRoleID = '';
        for (const key of ['usernameCSS', 'badgeCSS'] as const) if (key in form && !field(form, key)) patch[key] = null;
        return users.updateRole(id, patch);
      },
      remove: async (id) => {
        await users.deleteRole(id);
      },
      idOf: (r) => r.id,
      nameOf: (r) => r.name,
      values: (r) => ({
        name: r.name,
        slug: r.slug,
        priority: String(r.priority),
        chatRoleID: r.chatRoleID,
        usernameCSS: r.usernameCSS ?? '',
        badgeCSS: r.badgeCSS ?? '',
      }),
      cells: (r) => ({ slug: r.slug, priority: String(r.priority), privileged: users.privilegeOf(r) ?? '' }),
      errorFields: { CONFLICT: 'slug' },
    });
  },
};
