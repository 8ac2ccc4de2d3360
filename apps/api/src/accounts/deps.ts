import { fileQuotaOf } from '@meridian/domain';
import type { ApiParts } from '../api-parts.ts';
import type { FileCatalog } from '../files/catalog.ts';
import type { AccountsCommands } from './commands.ts';

export function accountsCommands({ services, settings, accounts }: ApiParts, files: FileCatalog): AccountsCommands & { readonly ready: boolean } {
  return {
    get state() {
      return accounts.state;
    },
    get ready() {
      return accounts.ready;
    },
    execute: async (userName, decide) => accounts.execute(userName, decide, await services.log.writer()),
    // Usage once the projection has reached the files log's end (bounded): a file whose task succeeded counts.
    fileUsage: async (userNames) => {
      await files.current();
      const usage = await files.usage(userNames);
      return new Map(
        userNames.map((userName) => [
          userName,
          {
            bytes_used: usage.get(userName)?.bytes ?? 0,
            quota_bytes: fileQuotaOf(accounts.state.users.get(userName), settings.MERIDIAN_FILE_QUOTA_BYTES),
          },
        ]),
      );
    },
  };
}
