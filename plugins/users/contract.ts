/**
 * The users feature's contract: accounts, roles and role assignments, linked external accounts.
 * Peers import only this file, and reach the service through the registry (`usersRef`).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { ConsoleAccess, ConsoleBlock, ConsoleRequest, ConsoleStaff } from '../../core/console.ts';
import { createServiceRef } from '../../core/registry.ts';
import { str } from '../../core/schemas.ts';
import type { Sql } from '../../core/sql.ts';

export interface UserAccount {
  id: number;
  /** As registered (display case); lookups by username are case-insensitive. */
  username: string;
  email: string | null;
  isVerified: boolean;
  /** 1 = two-factor enabled (decisions.md §3); 0 otherwise. */
  authStatus: number;
  creationIP: string;
  /** Stored UTC timestamp `YYYY-MM-DD HH:MM:SS`. */
  creationDate: string;
  /** External account ids by platform; the key `chat` carries the chat user ID. */
  linkedAccounts: Record<string, string>;
}

export interface Role {
  id: number;
  name: string;
  slug: string;
  priority: number;
  chatRoleID: string;
  usernameCSS: string | null;
  badgeCSS: string | null;
}

/** A role a user holds. */
export interface RoleAssignment extends Role {
  /** Stored UTC timestamp, or PERMANENT (`1000-01-01 00:00:00`). */
  expiryDate: string;
}

/**
 * Who a grant is made by. A privileged role (see UsersService.markPrivileged) is granted only when
 * `admin` is true: the caller acts for an admin (an API key with the `admin` scope, an admin in the
 * console, the operator's command line).
 */
export interface Grantor {
  admin: boolean;
}

export interface NewAccount {
  username: string;
  email?: string | null;
  creationIP: string;
  isVerified?: boolean;
}

/**
 * A value another feature adds to every profile (the credits feature's `credit`), read in the
 * profile's own statement: one round trip for a profile whatever the features running.
 */
export interface ProfileField {
  /** The profile field it fills, e.g. `credit`. */
  field: string;
  /**
   * A scalar SQL expression (core/sql.ts's `sql`) over the account id column it is given,
   * reading only the contributing feature's own tables.
   */
  select(accountId: Sql): Sql;
  /** The API's text for the value read. */
  show(value: unknown): string;
}

/** An account with the fields other features add to its profile (by ProfileField.field). */
export type Profile = UserAccount & { fields: Record<string, string> };

/** A figure on the staff console: on the dashboard or among a player's own. */
export interface PlayerFigure {
  label: string;
  value: string;
  href?: string;
}

/** A panel form shown again after a failed post: the fields as sent and the errors by field (`_form` for none). */
export interface PanelForm {
  values: Record<string, string>;
  errors: Record<string, string>;
}

/** The player's page being shown, as a panel sees it. */
export interface PlayerPageView {
  player: UserAccount;
  /** The page's path (`/console/players/<id>`): its links, and where the panel's actions post under. */
  href: string;
  /** The page's query (a panel's own paging keys); empty after a failed post. */
  query: Record<string, string>;
  staff: ConsoleStaff;
  /** The panel's form as posted, with its errors, when the panel's own action failed. */
  failed?: PanelForm;
}

/** What a panel adds to a player's page. */
export interface PlayerPanelContent {
  /** Figures after the player's own (email, chat ID, two-factor, registered). */
  stats?: PlayerFigure[];
  /** Blocks after the player's roles. */
  blocks?: ConsoleBlock[];
}

/** A change a panel's form posts to `<page>/<path>` (staff signed in, CSRF checked, the player looked up first). */
export interface PlayerAction {
  /** One path segment, e.g. `credits` for `/console/players/<id>/credits`. */
  path: string;
  /** Who may post it; default `admin` (the players section opens to support staff for looking up). */
  access?: ConsoleAccess;
  /** The form's schema, usually the API's own body: a form failing it is shown again with the message beside the field. */
  body?: TSchema;
  /** Makes the change: a notice shown on the player's page, or the errors to show the form again with (answered 422). */
  run(player: UserAccount, request: ConsoleRequest): Promise<{ notice: string } | { errors: Record<string, string> }>;
}

/**
 * What another feature shows of a player in the staff console (the credits feature's balance,
 * ledger and adjustment form), added to the players section without the users feature knowing it.
 * Panels show in the order features registered them.
 */
export interface PlayerPanel {
  /** Its share of a player's page; asked together with the page's own reads. */
  view(page: PlayerPageView): Promise<PlayerPanelContent>;
  /** Changes its forms post. */
  actions?: PlayerAction[];
  /** Figures for the dashboard, shown with the players section's. */
  dashboard?(): Promise<PlayerFigure[]>;
}

export interface UsersService {
  findById(id: number): Promise<UserAccount | undefined>;
  /** Case-insensitive. */
  findByUsername(username: string): Promise<UserAccount | undefined>;
  /** Case-insensitive: each name's user ID, or undefined, in the order given; one read for all of them. */
  idsByUsername(usernames: string[]): Promise<(number | undefined)[]>;
  /** The usernames of these user IDs (an unknown ID is left out), in one read: lists show names, not IDs. */
  usernames(ids: number[]): Promise<Map<number, string>>;
  findByLinkedAccount(platform: string, externalId: string): Promise<UserAccount | undefined>;
  /** Like findById but throws USER_NOT_FOUND. */
  requireById(id: number): Promise<UserAccount>;
  /** Like findByUsername but throws USER_NOT_FOUND. */
  requireByUsername(username: string): Promise<UserAccount>;
  /** Adds a field to every profile; called while features register. */
  addProfileField(field: ProfileField): void;
  /** Adds a panel to every player's page in the staff console; called while features register. */
  addPlayerPanel(panel: PlayerPanel): void;
  /** The account with its profile fields, in one statement; undefined when there is none. */
  findProfile(by: { id: number } | { username: string }): Promise<Profile | undefined>;
  /**
   * For the older path forms that name a user either way: digits are tried as an ID, then as a
   * username (a name may be all digits); anything else is a username. Throws USER_NOT_FOUND.
   */
  requireByIdOrUsername(idOrUsername: string): Promise<UserAccount>;
  /** findProfile for the older path forms, read the way requireByIdOrUsername reads its argument. */
  findProfileByIdOrUsername(idOrUsername: string): Promise<Profile | undefined>;
  /** Creates an account (the auth feature adds the credentials). Throws USERNAME_ALREADY_EXIST / EMAIL_ALREADY_EXIST. */
  createAccount(account: NewAccount): Promise<UserAccount>;
  /** Number of accounts created from an IP (the register limit). */
  countCreatedFrom(ip: string): Promise<number>;
  setAuthStatus(userId: number, authStatus: number): Promise<void>;
  setVerified(userId: number, verified: boolean): Promise<void>;
  linkAccount(userId: number, platform: string, externalId: string): Promise<void>;
  unlinkAccount(userId: number, platform: string): Promise<boolean>;

  /**
   * Accounts whose username or email starts with `text` (case-insensitive), or whose linked chat
   * account has that ID; every account when `text` is empty. By username, `limit` at most, after
   * the username `after` (keyset paging: as fast on the last page as on the first).
   */
  searchAccounts(text: string, page: { after?: string; limit: number }): Promise<UserAccount[]>;

  listRoles(): Promise<Role[]>;
  /** The role with this slug, if any. */
  findRoleBySlug(slug: string): Promise<Role | undefined>;
  /** Creates a role; a taken slug is a CONFLICT. */
  createRole(fields: Omit<Role, 'id'>): Promise<Role>;
  getRole(roleId: number): Promise<Role | undefined>;
  /** The roles a user holds now (expired ones are never returned), by priority. */
  rolesOf(userId: number): Promise<RoleAssignment[]>;
  /**
   * Grants a role or sets the expiry of one held; `expiryDate` defaults to PERMANENT. Throws
   * ROLE_NOT_FOUND, or FORBIDDEN for a privileged role unless `by` is an admin.
   */
  grantRole(userId: number, roleId: number, expiryDate?: string, by?: Grantor): Promise<RoleAssignment[]>;
  /**
   * Grants for `days` days, extending an unexpired assignment from its current expiry
   * (store purchases); days = 0 grants permanently. A privileged role is never granted this way (FORBIDDEN).
   */
  extendRole(userId: number, roleId: number, days: number): Promise<RoleAssignment[]>;
  /**
   * Marks the role with this slug privileged: granted only by an admin, never sold, never with a
   * narrower key. The console marks the roles that open it; another feature marks its own while
   * features register. `reason` completes the refusal: "Role 3 (Moderator) <reason>".
   */
  markPrivileged(slug: string, reason: string): void;
  /** Why a role is privileged (the reason it was marked with), or undefined when it is not. */
  privilegeOf(role: Pick<Role, 'slug'>): string | undefined;
  /** Removes a held role; false if the user did not hold it. */
  /** With `by`, a privileged role is taken away only by an admin (FORBIDDEN otherwise). */
  revokeRole(userId: number, roleId: number, by?: Grantor): Promise<boolean>;
}

/**
 * The form usernames and emails are looked up and kept unique by (the `*_key` columns, compared
 * byte for byte): anything counted per user, such as rate limits, keys on it too.
 */
export function lookupKey(name: string): string {
  return name.toLowerCase();
}

export const usersRef = createServiceRef<UsersService>('users');

/**
 * The game-side fields the Kotlin wrapper's `User` requires of every user it decodes (the profile,
 * the chat integration's user; docs/clients.md). No game reports them to this server yet: they
 * are empty, and `isLogged` is `0`.
 */
export const GameFields = {
  uuid: str("the player's game UUID; empty until a game reports it", ''),
  lastlogin: str('the last login in game; empty until a game reports it', ''),
  x: str('last position in game; empty until a game reports it', ''),
  y: str(undefined, ''),
  z: str(undefined, ''),
  world: str(undefined, ''),
  isLogged: str('flag: logged in in game now; 0 until a game reports it', '0'),
};
export const NO_GAME_FIELDS = { uuid: '', lastlogin: '', x: '', y: '', z: '', world: '', isLogged: '0' } satisfies { [K in keyof typeof GameFields]: string };

/** Path parameters of a route under /api/users/<userId>/… that another feature serves (its lists of a user). */
export const UserRefParams = Type.Object({ userId: Type.String({ minLength: 1, maxLength: 191, description: 'a user ID (digits) or a username' }) });

declare module '../../core/events.ts' {
  interface EventMap {
    'users.created': { userId: number; username: string };
    /** A role was granted, or the expiry of a held role changed. */
    'users.role.granted': { userId: number; roleId: number; expiryDate: string };
    'users.role.revoked': { userId: number; roleId: number; reason: 'revoked' | 'expired' };
  }
}
