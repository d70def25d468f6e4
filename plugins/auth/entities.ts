import { defineEntity, p } from '@mikro-orm/core';

/** A user's password hash (argon2id; imported bcrypt or AuthMe hashes until the next good login). */
export const AuthCredential = defineEntity({
  name: 'AuthCredential',
  tableName: 'auth_credentials',
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer().unique(),
    passwordHash: p.string().length(255),
    updatedAt: p.string().length(19),
  },
});

/** A user's TOTP secrets: the active one, one being enrolled, and the last time step accepted. */
export const AuthTotp = defineEntity({
  name: 'AuthTotp',
  tableName: 'auth_totp',
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer().unique(),
    secret: p.string().length(64).nullable(),
    pendingSecret: p.string().length(64).nullable(),
    /** RFC 6238 time step of the last code accepted: a code is good only for a later step (no replay). */
    lastStep: p.integer(),
  },
});

/** Sessions; the token itself is never stored, only its SHA-256. */
export const AuthSession = defineEntity({
  name: 'AuthSession',
  tableName: 'auth_sessions',
  properties: {
    id: p.integer().primary().autoincrement(),
    tokenHash: p.string().length(64).unique(),
    userId: p.integer().index(),
    ip: p.string().length(45),
    userAgent: p.string().length(512).nullable(),
    /** False while a two-factor code is awaited: such a session is not valid yet. */
    verified: p.boolean(),
    /** Wrong two-factor codes sent for this pending session. */
    failedCodes: p.integer(),
    createdAt: p.string().length(19),
    expiresAt: p.string().length(19).index(),
  },
});

export const entities = [AuthCredential, AuthTotp, AuthSession];
