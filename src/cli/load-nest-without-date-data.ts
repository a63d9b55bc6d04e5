import { whileLoading } from '../common/lazy-date-time-format';

/**
 * main.ts's first import: @nestjs/common loads here, before any module that imports it, with its
 * loggers' date formatters built on first use (src/common/lazy-date-time-format.ts says why).
 */
whileLoading(() => require('@nestjs/common'));
