import { defineEntity, p } from '../../core/table.ts';

/** A user's password hash (argon2id; imported bcrypt or AuthMe hashes until the next good login). */
export const AuthCredential = defineEntity({
  name: 'AuthCredential',
  tableName: 'auth_credentials',
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer().unique(),
    passwordHash: p.string().length(255),
    updatedAt: p.string().length(19),
    /** Wrong passwords in a row, from any ip (reset by a right one). */
    failedAttempts: p.integer().default(0),
    /** Logins are refused until then once failedAttempts reaches the cap. */
    lockedUntil: p.string().length(19).nullable(),
  },
});

/** A user's TOTP secrets: the active one, one being enrolled, and the last time step accepted. */
export const AuthTotp = defineEntity({
  name: 'AuthTotp',
  tableName: 'auth_totp',
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer().unique(),
    /** Encrypted with TOTP_ENCRYPTION_KEY (see secrets.ts). */
    secret: p.string().length(255).nullable(),
    pendingSecret: p.string().length(255).nullable(),
    /** RFC 6238 time step of the last code accepted: a code is good only for a later step (no replay). */
    lastStep: p.integer(),
    /** Wrong codes in a row across every pending login and enrolment of the account. */
    failedAttempts: p.integer().default(0),
    lockedUntil: p.string().length(19).nullable(),
  },
});

/**
 * One row per ip that registered: registrations from one ip lock it, so the register limit is
 * counted and enforced by one transaction at a time.
 */
export const AuthRegisterLock = defineEntity({
  name: 'AuthRegisterLock',
  tableName: 'auth_register_locks',
  properties: {
    ip: p.string().length(45).primary(),
    lockedAt: p.string().length(19),
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

export const entities = [AuthCredential, AuthTotp, AuthSession, AuthRegisterLock];
