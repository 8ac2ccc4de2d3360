export { runCommand, usage } from './commands.ts';
