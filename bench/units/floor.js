// The floor (bench/floor/worker.js, unchanged) with its object's units counted.
import floor, { FloorObject as Frozen } from '../floor/worker.js';
import { counted } from './count.js';

export const FloorObject = counted('floor', Frozen);
export default floor;
