import { defineEntity, p } from '../../core/table.ts';

export const UsersAccount = defineEntity({
  name: 'UsersAccount',
  tableName: 'users_accounts',
  properties: {
    id: p.integer().primary().autoincrement(),
    username: p.string().length(32),
    /**
     * usernameKey(username): unique, so lookups are case-insensitive on every database, and
     * otherwise byte-exact (VARBINARY on MySQL/MariaDB, see the users_binary_keys migration).
     */
    usernameKey: p.string().length(32).unique().ignoreSchemaChanges('type'),
    email: p.string().length(191).nullable(),
    emailKey: p.string().length(191).nullable().unique().ignoreSchemaChanges('type'),
    isVerified: p.boolean(),
    authStatus: p.integer(),
    creationIp: p.string().length(45).index(),
    creationDate: p.string().length(19),
  },
});

export const UsersRole = defineEntity({
  name: 'UsersRole',
  tableName: 'users_roles',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
    slug: p.string().length(64).unique(),
    priority: p.integer(),
    chatRoleId: p.string().length(32),
    usernameCss: p.text().nullable(),
    badgeCss: p.text().nullable(),
  },
});

export const UsersRoleAssignment = defineEntity({
  name: 'UsersRoleAssignment',
  tableName: 'users_role_assignments',
  uniques: [{ properties: ['userId', 'roleId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    roleId: p.integer().index(),
    /** UTC timestamp, or the PERMANENT sentinel (which sorts before every real time). */
    expiryDate: p.string().length(19).index(),
  },
});

export const UsersLinkedAccount = defineEntity({
  name: 'UsersLinkedAccount',
  tableName: 'users_linked_accounts',
  uniques: [{ properties: ['userId', 'platform'] }, { properties: ['platform', 'externalId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    platform: p.string().length(32),
    externalId: p.string().length(64),
  },
});

export const entities = [UsersAccount, UsersRole, UsersRoleAssignment, UsersLinkedAccount];
