/** The votes feature's contract: links to server-list sites where players vote. */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { example, idStr, str } from '../../core/schemas.ts';

export const VoteLinkRow = Type.Object({
  id: idStr(),
  name: example('Minecraft Server List'),
  link: str('URL', 'https://minecraft-server-list.example/server/1234/vote?username=Steve'),
});
export type VoteLinkRow = typeof VoteLinkRow.static;

export interface VoteLinkInput {
  name: string;
  /** An http(s) URL; `{username}` marks where the voter's name goes. */
  link: string;
}

export interface VotesService {
  /** Every link with `{username}` replaced by the URL-encoded name, or by nothing without one. */
  linksFor(username?: string): Promise<VoteLinkRow[]>;
  /** The stored links, placeholders kept. */
  list(): Promise<VoteLinkRow[]>;
  /** Throws VOTE_LINK_NOT_FOUND. */
  get(id: number): Promise<VoteLinkRow>;
  create(input: VoteLinkInput): Promise<VoteLinkRow>;
  update(id: number, patch: Partial<VoteLinkInput>): Promise<VoteLinkRow>;
  delete(id: number): Promise<void>;
}

export const votesRef = createServiceRef<VotesService>('votes');
