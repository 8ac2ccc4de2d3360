import { silenceKnownWarnings } from '@meridian/observability';

// The test processes use kafkajs too: keep its known timer warning off the output.
silenceKnownWarnings();
