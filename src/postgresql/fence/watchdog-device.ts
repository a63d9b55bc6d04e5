import { accessSync, constants as fsConstants } from 'node:fs';

/** Why the agent's user may not open `device` for writing, or null when it may (the reference's `is_healthy`: exists and W_OK). */
export type DeviceCheck = (device: string) => string | null;

/** The real check: access(2) with W_OK, never an open (opening a watchdog device arms it). */
export const writableDevice: DeviceCheck = (device) => {
  try {
    accessSync(device, fsConstants.W_OK);
    return null;
  } catch (error) {
    return `${device}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
};
