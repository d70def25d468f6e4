import type { FastifyInstance } from 'fastify';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import type { VotesService } from './contract.ts';
import { CreateLinkBody, Deleted, LinkList, LinkParams, LinksQuery, UpdateLinkBody, VoteLinkRow } from './schemas.ts';

export async function votesRoutes(fastify: FastifyInstance, votes: VotesService): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();

  app.get(
    '/api/vote-links',
    {
      schema: { tags: ['votes'], summary: 'Vote links for a player', querystring: LinksQuery, response: { 200: LinkList } },
    },
    async (request) => votes.linksFor(request.query.username),
  );

  const tags = ['admin'];
  app.get(
    '/api/admin/vote-links',
    {
      schema: { tags, summary: 'Vote links as stored (placeholders kept)', response: { 200: LinkList } },
    },
    async () => votes.list(),
  );

  app.post(
    '/api/admin/vote-links',
    {
      schema: { tags, summary: 'Add a vote link', body: CreateLinkBody, response: { 201: VoteLinkRow } },
    },
    async (request, reply) => reply.code(201).send(await votes.create(request.body)),
  );

  app.get(
    '/api/admin/vote-links/:id',
    {
      schema: { tags, summary: 'One vote link', params: LinkParams, response: { 200: VoteLinkRow }, errors: ['VOTE_LINK_NOT_FOUND'] },
    },
    async (request) => votes.get(Number(request.params.id)),
  );

  app.patch(
    '/api/admin/vote-links/:id',
    {
      schema: {
        tags,
        summary: 'Change a vote link',
        params: LinkParams,
        body: UpdateLinkBody,
        response: { 200: VoteLinkRow },
        errors: ['VOTE_LINK_NOT_FOUND'],
      },
    },
    async (request) => votes.update(Number(request.params.id), request.body),
  );

  app.delete(
    '/api/admin/vote-links/:id',
    {
      schema: { tags, summary: 'Delete a vote link', params: LinkParams, response: { 200: Deleted }, errors: ['VOTE_LINK_NOT_FOUND'] },
    },
    async (request) => {
      await votes.delete(Number(request.params.id));
      return { status: true as const };
    },
  );
}
