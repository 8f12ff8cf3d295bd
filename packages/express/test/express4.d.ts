// `express4` is express@4.21.2 installed under an alias so both majors can
// be tested; @types/express covers the API both share.
declare module 'express4' {
  import express from 'express';
  export default express;
}
