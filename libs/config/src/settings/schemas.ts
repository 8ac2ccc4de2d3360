import { z } from 'zod';

/** The shapes several settings share. */
export const port = z.coerce.number().int().min(1).max(65535);
export const positiveInt = z.coerce.number().int().positive();
export const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
