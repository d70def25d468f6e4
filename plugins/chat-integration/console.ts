/**
 * The chat-integration feature's console section: the settings the chat bot reads (role sync,
 * tickets, the guild, nicknames), checked with the admin API's schema. The form shows every
 * setting, so an emptied field clears it and an unticked box turns it off.
 */
import { Type } from '@sinclair/typebox';
import type { ConsolePage, ConsoleSection } from '../../core/console.ts';
import { field } from '../../core/console.ts';
import { toBool } from '../../core/schemas.ts';
import type { ChatIntegrationService, ChatSettings } from './contract.ts';
import { SettingsPatch } from './schemas.ts';

/** The API's patch, but the staff role IDs as one text field (a form sends text, not a list). */
const SettingsForm = Type.Object({ ...SettingsPatch.properties, ticketStaffRoleIDs: Type.Optional(Type.String({ maxLength: 6600 })) });

const CHAT_ID = /^[A-Za-z0-9_-]{0,64}$/;
const FLAGS = ['roleSyncingStatus', 'ticketStatus', 'setNicknameStatus'] as const;
const IDS = ['syncedRoleID', 'ticketCategoryID', 'guildID'] as const;

export const chatSection: ConsoleSection<unknown, ChatIntegrationService> = {
  id: 'chat',
  title: 'Chat settings',
  order: 78,
  pages(pages, _ctx, chat) {
    const page = async (edit?: { values: Record<string, string>; errors: Record<string, string> }): Promise<ConsolePage> => {
      const s = await chat.settings();
      return {
        title: 'Chat settings',
        status: edit ? 422 : 200,
        blocks: [
          {
            kind: 'form',
            id: 'chat-settings',
            title: 'Chat bot settings',
            action: pages.base,
            submit: 'Save chat settings',
            values: edit?.values ?? {
              ...Object.fromEntries(FLAGS.map((k) => [k, String(s[k])])),
              ...Object.fromEntries(IDS.map((k) => [k, s[k]])),
              ticketStaffRoleIDs: s.ticketStaffRoleIDs.join(' '),
            },
            errors: edit?.errors,
            fields: [
              { name: 'guildID', label: 'Guild ID', hint: 'The chat server the bot serves; without it the bot never removes expired temporary roles.' },
              { name: 'roleSyncingStatus', label: 'Sync roles of linked players to the chat platform', type: 'checkbox' },
              { name: 'syncedRoleID', label: 'Synced role ID', hint: 'The chat role every linked player gets.' },
              { name: 'setNicknameStatus', label: "Set each linked member's nickname to their name", type: 'checkbox' },
              { name: 'ticketStatus', label: 'Tickets from the chat', type: 'checkbox' },
              { name: 'ticketCategoryID', label: 'Ticket category ID', hint: 'The chat category ticket channels are made in.' },
              { name: 'ticketStaffRoleIDs', label: 'Ticket staff role IDs', hint: 'Chat role IDs that see ticket channels, separated by spaces or commas.' },
            ],
          },
        ],
      };
    };

    pages.get('', async () => page());

    pages.post(
      '',
      async ({ invalid, form }) => {
        const values = { ...form, ...Object.fromEntries(FLAGS.map((k) => [k, toBool(form[k]) ? 'true' : 'false'])) };
        if (invalid) return page({ values, errors: invalid });
        const staff = field(form, 'ticketStaffRoleIDs')
          .split(/[\s,]+/)
          .filter(Boolean);
        const bad = staff.find((id) => !CHAT_ID.test(id));
        if (bad !== undefined) {
          const message = `ticketStaffRoleIDs: "${bad.slice(0, 70)}" is not a chat ID (letters, digits, - and _, at most 64)`;
          return page({ values, errors: { ticketStaffRoleIDs: message } });
        }
        if (staff.length > 100) return page({ values, errors: { ticketStaffRoleIDs: 'ticketStaffRoleIDs must have at most 100 items' } });
        const patch: Partial<ChatSettings> = {
          ...Object.fromEntries(FLAGS.map((k) => [k, toBool(form[k])])),
          ...Object.fromEntries(IDS.map((k) => [k, field(form, k)])),
          ticketStaffRoleIDs: staff,
        };
        await chat.updateSettings(patch);
        return { redirect: pages.base, notice: 'Chat settings saved.' };
      },
      { body: SettingsForm },
    );
  },
};
