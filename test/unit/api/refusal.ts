import { OperationRefused } from '../../../src/ha/operation-types';

/** The status and text an operation answers when `work` refuses it, or null when it is accepted. */
export function refusal(work: () => unknown): { status: number; text: string } | null {
  try {
    work();
    return null;
  } catch (error) {
    if (error instanceof OperationRefused) return { status: error.status, text: error.text };
    throw error;
  }
}
